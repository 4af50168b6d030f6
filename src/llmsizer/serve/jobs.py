"""Plans run off the request thread: a job per use case, cached by its input, with progress,
cancel, and two stages so the answer shows before the extras.

    jobs = Jobs()
    job = jobs.submit(usecase)          # the same use case again: the same job
    job.answer                          # plan data of the quick stage once it is there
    job.data                            # the whole plan once done
    jobs.cancel(job.id)

Stage 1 is `plan(..., quick=True)` without curves: the search and the answer (servers,
GPUs, cost, binding limit) without the latency curves, the uncertainty band and the
timeline; stage 2 plans again in full on the same cached probes, so only the curves', the
band's and the timeline's simulations are new. Both stages
share one `ProbeCache`: a plan asked again with another limit, load or price re-simulates
only rates it has not seen.

Jobs run on a small thread pool, not in processes: the probe cache is shared in memory, and
the event loop answers other tabs while the GIL switches between threads every 5 ms.
Cancelling sets a flag that the plan's progress callback checks after each configuration.
A job nobody has asked about for `ABANDON_S` (a page polls every 150 ms while it waits) is
cancelled the same way: the fields a user typed on the way to their use case each start a
plan, and those must not hold the workers.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from llmsizer.sizing.plan import plan
from llmsizer.sizing.plan_data import plan_data
from llmsizer.sizing.probe_cache import ProbeCache
from llmsizer.sizing.result import PlanResult
from llmsizer.sizing.usecase import UseCase

log = logging.getLogger("llmsizer.serve")
DEFAULT_WORKERS = 2  # plans running at once (this machine: 2 cores)
DEFAULT_MAX_JOBS = 200  # finished jobs kept (their plan data: tens of kB each)
ABANDON_S = 20.0  # a running job no page has polled for this long is cancelled


class State(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


_AGAIN = (State.FAILED, State.CANCELLED)  # a job in these states is started again when asked


class Cancelled(Exception):
    """Raised in a plan's progress callback when its job was cancelled."""


@dataclass(eq=False)
class Job:
    """One use case being planned. Written by its worker thread, read by requests."""

    id: str
    key: str
    usecase: UseCase
    state: State = State.QUEUED
    done: int = 0
    total: int = 0
    stage: str = "queued"
    answer: dict[str, Any] | None = None  # stage 1's plan data
    data: dict[str, Any] | None = None  # stage 2's plan data
    result: PlanResult | None = None
    error: str | None = None
    submitted_s: float = field(default_factory=time.monotonic)
    answer_s: float | None = None  # seconds from submission to the first answer
    seen_s: float = field(default_factory=time.monotonic)  # last asked about
    cancel_event: threading.Event = field(default_factory=threading.Event)
    tabs: set[str] = field(default_factory=set)  # pages waiting for it

    def touch(self) -> Job:
        """Someone is still waiting for this job (see `ABANDON_S`)."""
        self.seen_s = time.monotonic()
        return self

    @property
    def abandoned(self) -> bool:
        return time.monotonic() - self.seen_s > ABANDON_S

    @property
    def finished(self) -> bool:
        return self.state in (State.DONE, State.FAILED, State.CANCELLED)

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.total) if self.total else 0


def usecase_key(usecase: UseCase) -> str:
    """The cache key of a use case: its validated fields, defaults filled in."""
    return json.dumps(usecase.model_dump(mode="json"), sort_keys=True)


def first_stage(usecase: UseCase) -> UseCase:
    """Stage 1's use case: the same question without the latency curves."""
    search = usecase.search.model_copy(update={"curves": False})
    return usecase.model_copy(update={"search": search})


class Jobs:
    """The job table (module docstring). `close()` stops the workers."""

    def __init__(
        self,
        *,
        workers: int = DEFAULT_WORKERS,
        max_jobs: int = DEFAULT_MAX_JOBS,
        probes: ProbeCache | None = None,
    ) -> None:
        self.probes = ProbeCache() if probes is None else probes
        self.max_jobs = max_jobs
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="llmsizer-plan")
        self._by_id: OrderedDict[str, Job] = OrderedDict()
        self._by_key: dict[str, Job] = {}
        self._by_tab: dict[str, Job] = {}  # the job each page waits for
        self._lock = threading.Lock()

    def submit(self, usecase: UseCase, tab: str | None = None) -> Job:
        """The job of `usecase`: a running or finished one with the same input, or a new one
        (a failed or cancelled job, or one told to stop, is started again).

        `tab` names the page asking: its previous job is cancelled when no other page
        waits for it (a user typing makes a use case per pause; only the last one counts).
        """
        key = usecase_key(usecase)
        with self._lock:
            job = self._by_key.get(key)
            new = job is None or job.cancel_event.is_set() or job.state in _AGAIN
            if job is None or new:
                job = Job(uuid.uuid4().hex[:12], key, usecase)
                self._by_id[job.id] = job
                self._by_key[key] = job
                self._forget_old()
            self._by_id.move_to_end(job.id)
            if tab is not None:
                self._follow(job, tab)
        if new:
            self._pool.submit(self._run, job)
        return job.touch()

    def _follow(self, job: Job, tab: str) -> None:
        """`tab` now waits for `job`; its previous job is cancelled if nobody else waits."""
        previous = self._by_tab.get(tab)
        self._by_tab[tab] = job
        job.tabs.add(tab)
        if previous is not None and previous is not job:
            previous.tabs.discard(tab)
            if not previous.tabs and not previous.finished:
                previous.cancel_event.set()
        if len(self._by_tab) > 4 * self.max_jobs:  # tabs long closed
            for old in list(self._by_tab)[: len(self._by_tab) // 2]:
                self._by_tab.pop(old).tabs.discard(old)

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            job = self._by_id.get(job_id)
        return None if job is None else job.touch()

    def cancel(self, job_id: str, tab: str | None = None) -> Job | None:
        """Stop job `job_id` and, when `tab` is given, the job that page now waits for: the
        page may show an older job than the server holds for it (a use case typed just
        before the click is on its way), and the user means the plan in progress."""
        job = self.get(job_id)
        with self._lock:
            current = None if tab is None else self._by_tab.get(tab)
        for stop in (job, current):
            if stop is not None and not stop.finished:
                stop.cancel_event.set()
        return job

    def wait(self, job: Job, timeout_s: float) -> bool:
        """Block (a worker thread, never the event loop) until `job` is finished."""
        end = time.monotonic() + timeout_s
        while not job.finished and time.monotonic() < end:
            job.touch()
            time.sleep(0.05)
        return job.finished

    def close(self) -> None:
        with self._lock:
            for job in self._by_id.values():
                job.cancel_event.set()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _forget_old(self) -> None:
        finished = [j for j in self._by_id.values() if j.finished]
        for job in finished[: max(0, len(self._by_id) - self.max_jobs)]:
            del self._by_id[job.id]
            if self._by_key.get(job.key) is job:
                del self._by_key[job.key]

    def _run(self, job: Job) -> None:
        def check() -> None:
            if job.cancel_event.is_set() or job.abandoned:
                raise Cancelled

        def progress(done: int, total: int) -> None:
            check()
            job.done, job.total = done, total

        try:
            check()
            job.state, job.stage = State.RUNNING, "searching"
            first = plan(
                first_stage(job.usecase), progress=progress, probes=self.probes, quick=True
            )
            check()
            job.answer = plan_data(first)
            job.answer_s = time.monotonic() - job.submitted_s
            job.stage = "curves and uncertainty band"
            check()
            result = plan(job.usecase, progress=progress, probes=self.probes)
            check()  # a cancel that came after the plan's last checkpoint still cancels
            job.result = result
            job.data = plan_data(result)
            job.state, job.stage = State.DONE, "done"
        except Cancelled:
            job.state, job.stage = State.CANCELLED, "cancelled"
        except (ValueError, OSError) as e:  # a trace that cannot be read, a model that...
            job.error = str(e)
            job.state, job.stage = State.FAILED, "failed"
        except Exception as e:  # a bug: the page says so in one line, the log has the trace
            log.exception("plan failed")
            job.error = f"internal error ({type(e).__name__}): {e}"
            job.state, job.stage = State.FAILED, "failed"
