"""A pool: engine runs of one role behind one router, and what the router may see of them.

`Pool` is the router's `FleetView` (requests in flight, KV use per instance) and keeps the
books as the owner advances its runs: requests routed and finished per instance, and which
finished since the owner last asked (`new_finishes`), with the time each finished.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from llmsizer.fleet.routed import RoutedArrivals
from llmsizer.fleet.router import make_router
from llmsizer.sim import Engine
from llmsizer.sim.arrivals import Arrivals
from llmsizer.workload import Workload


class Pool:
    """`engines` started on `workload` (every request that may reach them), routed by
    `router`. `num_computed_tokens[i]`: tokens of request i's prompt whose KV arrives with
    it (a prefill worker's handoff), None when every prompt is computed here."""

    def __init__(
        self,
        engines: Sequence[Engine],
        workload: Workload,
        router: str,
        rng: np.random.Generator,
        num_computed_tokens: Sequence[int] | None = None,
    ) -> None:
        if not engines:
            raise ValueError("a pool needs at least 1 instance (replicas >= 1), got 0")
        sizes = {e.config.block_size for e in engines}
        if len(sizes) > 1:
            raise ValueError(f"a pool's instances must share one block_size, got {sorted(sizes)}")
        cfg = engines[0].config
        base = Arrivals(workload, cfg.block_size, cfg.enable_prefix_caching)
        self.arrivals = [RoutedArrivals.share(base, num_computed_tokens) for _ in engines]
        self.runs = [e.start(workload, a) for e, a in zip(engines, self.arrivals, strict=True)]
        self.router = make_router(router, workload, rng)
        self.routed = np.zeros(len(engines), dtype=np.int64)
        self.outstanding = np.zeros(len(engines), dtype=np.int64)
        self.num_seen = [0] * len(engines)

    @property
    def num_instances(self) -> int:
        return len(self.runs)

    def kv_usage(self) -> np.ndarray:
        usage = np.empty(len(self.runs))
        for i, run in enumerate(self.runs):
            kv = run.kv
            held = kv.num_used - kv.num_evictable
            usage[i] = held / kv.capacity if kv.capacity else float(held)
        return usage

    def route(self, request_id: int, arrival_s: float) -> int:
        """Choose an instance for the request and hand it over; returns the instance."""
        i = self.router.choose(request_id, self)
        self.send(i, request_id, arrival_s)
        return i

    def send(self, i: int, request_id: int, arrival_s: float) -> None:
        """Hand the request to instance `i` (the router's choice)."""
        self.arrivals[i].push(request_id, arrival_s)
        self.routed[i] += 1
        self.outstanding[i] += 1

    def advance(self, i: int, until_s: float | None) -> None:
        """Run instance `i` until `until_s` (`Engine.start`'s `advance`); recount its load."""
        self.runs[i].advance(until_s)
        t = math.inf if until_s is None else until_s
        self.outstanding[i] = self.routed[i] - self.arrivals[i].num_finished_by(t)

    def has_work(self, i: int) -> bool:
        """Whether instance `i` must be advanced again: requests to run, or requests that
        finish in its last step, after the time it was advanced to (still counted in
        flight until then)."""
        run = self.runs[i]
        finishing = self.outstanding[i] != self.routed[i] - self.arrivals[i].num_finished
        return finishing or run.scheduler.has_unfinished() or run.arrivals.next_s() is not None

    def new_finishes(self, i: int) -> list[tuple[int, float]]:
        """Ids of the requests instance `i` finished since the last call, with their finish
        times."""
        start = self.num_seen[i]
        finished = self.runs[i].finished.request_ids(start)
        times = self.arrivals[i].finish_times[start:]
        self.num_seen[i] = start + len(finished)
        return list(zip(finished, times, strict=True))
