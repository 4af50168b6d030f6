"""Where a sweep's independent jobs run: here, in a local process pool, or on a Ray cluster.

    with open_sweep(workers=2) as sweep:              # or ray=True, or ray_address="host:6379"
        rows = sweep.map(predict_row, cases)          # fn(case) for each case, in order

A sweep is many jobs that share nothing: `predict --cases` rows, `plan`'s per-GPU searches,
the calibration's recorded schedules. Each job is a pure function of its picklable input
(seeds included), so whichever runs them the results are the same, value for value
(`tests/test_sweep.py` runs one sweep on both). Jobs go out in chunks, about four per
worker, so that a worker's per-task overhead (a pickle round trip; Ray's scheduling,
`bench/ray_scaling.py`) is paid per chunk and a slow chunk still leaves others to share.

Ray is the extra `llmsizer[ray]`, imported only when asked for. `open_sweep(ray=True)`
joins the Ray already running on this machine (`ray start --head`, or `RAY_ADDRESS`) or
starts a local one for the sweep; `ray_address` names a cluster (`ray://head:10001` or
`head:6379`), whose nodes need llmsizer installed at the driver's version. A Ray the
caller had already initialised is used as it is and left running.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from llmsizer.errors import import_extra

T = TypeVar("T")
R = TypeVar("R")
Progress = Callable[[int, int], None]  # (jobs done, jobs in total)
CHUNKS_PER_WORKER = 4


class Sweep(Protocol):
    """Runs `fn` over `items` and returns the results in the items' order."""

    @property
    def workers(self) -> int:
        """How many jobs can run at once."""
        ...

    def map(
        self, fn: Callable[[T], R], items: Sequence[T], progress: Progress | None = None
    ) -> list[R]: ...


def chunk_size(num_items: int, workers: int) -> int:
    """Items per chunk: about `CHUNKS_PER_WORKER` chunks for each worker, at least 1."""
    return max(1, math.ceil(num_items / (CHUNKS_PER_WORKER * max(1, workers))))


def _chunks(items: Sequence[T], size: int) -> list[Sequence[T]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _run_chunk(fn: Callable[[T], R], chunk: Sequence[T]) -> list[R]:
    return [fn(item) for item in chunk]


@dataclass(frozen=True, slots=True)
class InProcess:
    """Every job here, one after another: the sweep of one worker."""

    @property
    def workers(self) -> int:
        return 1

    def map(
        self, fn: Callable[[T], R], items: Sequence[T], progress: Progress | None = None
    ) -> list[R]:
        results = []
        for item in items:
            results.append(fn(item))
            if progress is not None:
                progress(len(results), len(items))
        return results


@dataclass(frozen=True, slots=True)
class ProcessPool:
    """Jobs in a local `ProcessPoolExecutor` of `workers` processes (open it with
    `open_sweep`)."""

    pool: Executor
    num_workers: int

    @property
    def workers(self) -> int:
        return self.num_workers

    def map(
        self, fn: Callable[[T], R], items: Sequence[T], progress: Progress | None = None
    ) -> list[R]:
        chunks = _chunks(items, chunk_size(len(items), self.num_workers))
        results: list[R] = []
        for done in self.pool.map(_run_chunk, [fn] * len(chunks), chunks):
            results.extend(done)
            if progress is not None:
                progress(len(results), len(items))
        return results


@dataclass(frozen=True, slots=True)
class RayCluster:
    """Jobs as Ray tasks, one CPU each, on the cluster `ray` (the module) is connected to."""

    ray: Any

    @property
    def workers(self) -> int:
        return max(1, int(self.ray.cluster_resources().get("CPU", 1)))

    def map(
        self, fn: Callable[[T], R], items: Sequence[T], progress: Progress | None = None
    ) -> list[R]:
        if not items:
            return []
        ray = self.ray
        task = ray.remote(num_cpus=1, max_retries=0)(_run_chunk)
        fn_ref = ray.put(fn)  # sent to the object store once, not once per chunk
        chunks = _chunks(items, chunk_size(len(items), self.workers))
        refs = [task.remote(fn_ref, chunk) for chunk in chunks]
        index = {ref: i for i, ref in enumerate(refs)}
        results: list[list[R] | None] = [None] * len(refs)
        pending, done = list(refs), 0
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                results[index[ref]] = ray.get(ref)
                done += len(chunks[index[ref]])
            if progress is not None:
                progress(done, len(items))
        return [r for chunk in results if chunk is not None for r in chunk]


@contextmanager
def open_sweep(
    workers: int | None = None, *, ray: bool = False, ray_address: str | None = None
) -> Iterator[Sweep]:
    """The sweep to run jobs on (module docstring), closed on exit.

    Without Ray: `workers` local processes (default: the CPUs this process may use,
    `usable_cpus`), or in this process when `workers` is 1. With `ray` or a `ray_address`:
    Ray (`workers` is then the cluster's CPUs); a missing Ray raises `MissingExtraError`
    naming the extra.
    """
    if ray or ray_address is not None:
        with _ray_session(ray_address) as cluster:
            yield cluster
        return
    n = usable_cpus() if workers is None else workers
    if n < 1:
        raise ValueError(f"workers must be at least 1, got {n}")
    if n == 1:
        yield InProcess()
        return
    with ProcessPoolExecutor(n) as pool:
        yield ProcessPool(pool, n)


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity mask where there is one (a container's
    or `taskset`'s share, not the machine's count), at least 1."""
    affinity = getattr(os, "sched_getaffinity", None)
    return max(1, len(affinity(0)) if affinity is not None else os.cpu_count() or 1)


@contextmanager
def _ray_session(address: str | None) -> Iterator[RayCluster]:
    """Ray connected to `address` (None: this machine's, or a new local one); shut down on
    exit only when this session started the connection."""
    ray = import_extra("ray", "ray", "running a sweep on Ray (--ray, --ray-address)")
    if ray.is_initialized():
        yield RayCluster(ray)
        return
    try:
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.WARNING,
            configure_logging=True,
        )
    except ConnectionError as e:  # Ray's own message names the address, not why
        raise ConnectionError(
            f"{e}: is Ray running there, and does this machine hold the cluster's token "
            "(~/.ray/auth_token or RAY_AUTH_TOKEN: Ray 2.60 authenticates by token)?"
        ) from None
    try:
        yield RayCluster(ray)
    finally:
        ray.shutdown()
