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

from llmsizer.fleet.pool import Pool
from llmsizer.records import RequestRecord
from llmsizer.sim import Engine, SimResult
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


def simulate_fleet(
    engines: Sequence[Engine], workload: Workload, router: str = "round_robin", seed: int = 0
) -> FleetResult:
    """Run `workload` through `engines` behind `router` (a name in `ROUTERS`).

    `seed` seeds the router's own random choices (random, power of two); the workload's
    randomness is already in `workload`. Instances may differ (their own batch settings or
    step costs) but share one KV block size, which prefix hashes are cut to.
    """
    check_fleet(engines, workload)
    pool = Pool(engines, workload, router, np.random.default_rng(seed))
    assert workload.arrival_s is not None  # checked: open loop
    busy: list[tuple[float, int]] = []  # (instance clock, index) of instances with work
    in_busy = np.zeros(len(engines), dtype=bool)
    for request_id, t in enumerate(workload.arrival_s.tolist()):
        advance_busy(pool, busy, in_busy, t)
        i = pool.route(request_id, t)
        if not in_busy[i]:
            in_busy[i] = True
            heapq.heappush(busy, (t, i))
    for i in range(len(engines)):
        pool.advance(i, None)
    results = [run.result() for run in pool.runs]
    return FleetResult(records=label_instances(results, workload.num_requests), instances=results)


def advance_busy(pool: Pool, busy: list[tuple[float, int]], in_busy: np.ndarray, t: float) -> None:
    """Bring every busy instance whose clock is at or behind `t` up to `t`. One whose step
    ends exactly at `t` stays at `t` (no step starts before it): it goes back on the heap
    after the others, or requests arriving together (a burst at t = 0) would advance it
    forever."""
    later: list[tuple[float, int]] = []
    while busy and busy[0][0] <= t:
        _, i = heapq.heappop(busy)
        pool.advance(i, t)
        if not pool.has_work(i):
            in_busy[i] = False
        elif pool.runs[i].now > t:
            heapq.heappush(busy, (pool.runs[i].now, i))
        else:
            later.append((pool.runs[i].now, i))
    for item in later:
        heapq.heappush(busy, item)


def label_instances(results: Sequence[SimResult], num_requests: int) -> list[RequestRecord]:
    """Every instance's records, each with its `instance_id`, in request-id order."""
    records: list[RequestRecord | None] = [None] * num_requests
    for i, res in enumerate(results):
        for r in res.records:
            records[r.request_id] = dataclasses.replace(r, instance_id=i)
    assert all(r is not None for r in records)  # every request ran exactly once
    return [r for r in records if r is not None]
