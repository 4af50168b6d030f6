"""A fleet: N serving engines behind a router, simulated together on one clock.

The loop, per arrival in time order: bring every instance whose clock is behind the arrival
up to it (`Engine.start(...).advance`), let the router choose an instance from what it sees
then, hand the request to that instance. Each instance is an unmodified `sim.Engine` run,
so its scheduler, KV cache and step costs are the single-engine ones. An idle instance is
not touched until a request reaches it; a busy one only when an arrival passes its clock.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from llmsizer.fleet.routed import RoutedArrivals
from llmsizer.fleet.router import make_router
from llmsizer.records import RequestRecord
from llmsizer.sim import Engine, SimResult
from llmsizer.sim.arrivals import Arrivals
from llmsizer.workload import Workload


@dataclass(frozen=True, slots=True)
class FleetResult:
    """Every request's record (in request-id order, each with its `instance_id`) and each
    instance's own run (its step log, preemptions, KV peak)."""

    records: list[RequestRecord]
    instances: list[SimResult]

    @property
    def num_requests_per_instance(self) -> np.ndarray:
        counts = np.zeros(len(self.instances), dtype=np.int64)
        for r in self.records:
            counts[r.instance_id] += 1
        return counts


def check_fleet(engines: Sequence[Engine], workload: Workload) -> None:
    """Reject a fleet that cannot run `workload`, naming what is wrong and what is allowed."""
    if not engines:
        raise ValueError("a fleet needs at least 1 instance (replicas >= 1), got 0")
    if workload.is_closed_loop:
        raise ValueError(
            "a fleet routes arriving requests: give the workload arrival times (Poisson, "
            "gamma, a trace), not a closed loop at fixed concurrency"
        )
    for i, e in enumerate(engines):
        if e.config.batching != "continuous":
            raise ValueError(
                f"instance {i} uses {e.config.batching} batching; a fleet simulates "
                "continuous batching only (static batches wait for arrivals the router "
                "has not sent yet)"
            )


class _Fleet:
    """One fleet run: the instances' runs, what each holds, the router."""

    def __init__(self, engines: Sequence[Engine], workload: Workload, router: str, seed: int):
        check_fleet(engines, workload)
        self.workload = workload
        self.router = make_router(router, workload, np.random.default_rng(seed))
        cfg = engines[0].config
        base = Arrivals(workload, cfg.block_size, cfg.enable_prefix_caching)
        self.arrivals = [RoutedArrivals.share(base) for _ in engines]
        self.runs = [e.start(workload, a) for e, a in zip(engines, self.arrivals, strict=True)]
        self.routed = np.zeros(len(engines), dtype=np.int64)
        self.outstanding = np.zeros(len(engines), dtype=np.int64)

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

    def run(self) -> FleetResult:
        """Route each arrival in time order; then let every instance finish its work."""
        assert self.workload.arrival_s is not None  # checked: open loop
        busy: list[tuple[float, int]] = []  # (instance clock, index) of instances with work
        in_busy = np.zeros(len(self.runs), dtype=bool)
        for request_id, t in enumerate(self.workload.arrival_s.tolist()):
            while busy and busy[0][0] <= t:
                _, i = heapq.heappop(busy)
                self._advance(i, t)
                if self._has_work(i):
                    heapq.heappush(busy, (self.runs[i].now, i))
                else:
                    in_busy[i] = False
            i = self.router.choose(request_id, self)
            self.arrivals[i].push(request_id, t)
            self.routed[i] += 1
            self.outstanding[i] += 1
            if not in_busy[i]:
                in_busy[i] = True
                heapq.heappush(busy, (t, i))
        for i in range(len(self.runs)):
            self.runs[i].advance(None)
        return self._result()

    def _advance(self, i: int, until_s: float) -> None:
        run = self.runs[i]
        run.advance(until_s)
        self.outstanding[i] = self.routed[i] - self.arrivals[i].num_finished_by(until_s)

    def _has_work(self, i: int) -> bool:
        run = self.runs[i]
        return run.scheduler.has_unfinished() or run.arrivals.next_s() is not None

    def _result(self) -> FleetResult:
        results = [run.result() for run in self.runs]
        records: list[RequestRecord | None] = [None] * self.workload.num_requests
        for i, res in enumerate(results):
            for r in res.records:
                records[r.request_id] = dataclasses.replace(r, instance_id=i)
        assert all(r is not None for r in records)  # every request ran exactly once
        return FleetResult(records=[r for r in records if r is not None], instances=results)


def simulate_fleet(
    engines: Sequence[Engine], workload: Workload, router: str = "round_robin", seed: int = 0
) -> FleetResult:
    """Run `workload` through `engines` behind `router` (a name in `ROUTERS`).

    `seed` seeds the router's own random choices (random, power of two); the workload's
    randomness is already in `workload`. Instances may differ (their own batch settings or
    step costs) but share one KV block size, which prefix hashes are cut to.
    """
    sizes = {e.config.block_size for e in engines}
    if len(sizes) > 1:
        raise ValueError(f"a fleet's instances must share one block_size, got {sorted(sizes)}")
    return _Fleet(engines, workload, router, seed).run()
