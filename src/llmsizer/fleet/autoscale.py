"""An autoscaled fleet: instances started and stopped by a target-tracking autoscaler.

Every `interval_s` the autoscaler reads requests in flight (routed and not finished, the
metric KEDA scales vLLM on: `num_requests_running + num_requests_waiting`) over the
instances serving and asks for `ceil(in flight / target_in_flight)` instances, within
[`min_instances`, `max_instances`]. More: the extra instances start now and serve after
`startup_s` (loading the weights), paying for their GPUs from now. Fewer: only when
`cooldown_s` has passed since the last change; the instances with the fewest requests in
flight stop taking new ones and are paid for until their last request finishes. The router
chooses among the instances serving. Open loop only.
"""

from __future__ import annotations

import bisect
import heapq
import math
from dataclasses import dataclass

import numpy as np

from llmsizer.fleet.fleet import FleetResult, advance_busy, check_fleet, label_instances
from llmsizer.fleet.pool import Pool
from llmsizer.sim import Engine
from llmsizer.workload import Workload


@dataclass(frozen=True, slots=True)
class Autoscaler:
    """Target tracking on requests in flight per instance (module docstring). Seconds."""

    target_in_flight: float
    max_instances: int
    startup_s: float
    min_instances: int = 1
    interval_s: float = 30.0
    cooldown_s: float = 300.0

    def __post_init__(self) -> None:
        if not 1 <= self.min_instances <= self.max_instances:
            raise ValueError(
                f"autoscaler needs 1 <= min_instances ({self.min_instances}) <= max_instances "
                f"({self.max_instances})"
            )
        for name in ("target_in_flight", "interval_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"autoscaler {name} must be > 0, got {getattr(self, name)}")
        for name in ("startup_s", "cooldown_s"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"autoscaler {name} must be >= 0, got {getattr(self, name)}")

    def desired(self, in_flight: int) -> int:
        want = math.ceil(in_flight / self.target_in_flight)
        return min(self.max_instances, max(self.min_instances, want))


@dataclass(frozen=True, slots=True)
class AutoscaledResult:
    """The fleet's records and runs, each instance's paid intervals (start, end) in
    seconds, and at every autoscaler tick: time, instances serving, instances paid for."""

    fleet: FleetResult
    paid_s: tuple[tuple[int, float, float], ...]  # (instance, start, end)
    tick_s: np.ndarray
    num_serving: np.ndarray
    num_paid: np.ndarray

    @property
    def instance_seconds(self) -> float:
        return sum(end - start for _, start, end in self.paid_s)


class _Serving:
    """The router's view restricted to the instances serving (`FleetView`)."""

    def __init__(self, pool: Pool, index: np.ndarray) -> None:
        self.pool, self.index = pool, index

    @property
    def num_instances(self) -> int:
        return int(self.index.shape[0])

    @property
    def outstanding(self) -> np.ndarray:
        return self.pool.outstanding[self.index]

    def kv_usage(self) -> np.ndarray:
        return self.pool.kv_usage()[self.index]


def simulate_autoscaled(
    engine: Engine,
    workload: Workload,
    autoscaler: Autoscaler,
    router: str = "least_outstanding",
    seed: int = 0,
) -> AutoscaledResult:
    """Run `workload` on up to `max_instances` copies of `engine` under `autoscaler`; the
    fleet starts at `min_instances`, serving from t = 0."""
    if router == "prefix":
        raise ValueError("router 'prefix' keeps per-instance tables: not with an autoscaler")
    a = autoscaler
    engines = [engine] * a.max_instances
    check_fleet(engines, workload)
    assert workload.arrival_s is not None
    pool = Pool(engines, workload, router, np.random.default_rng(seed))
    ready = np.full(a.max_instances, math.inf)  # when each serves (inf: stopped)
    ready[: a.min_instances] = 0.0
    started = {i: 0.0 for i in range(a.min_instances)}
    paid: list[tuple[int, float, float]] = []
    last_change = -math.inf
    ticks: list[tuple[float, int, int]] = []
    busy: list[tuple[float, int]] = []
    in_busy = np.zeros(a.max_instances, dtype=bool)

    def advance_to(t: float) -> None:
        advance_busy(pool, busy, in_busy, t)

    arrivals = workload.arrival_s.tolist()
    end_s = arrivals[-1] if arrivals else 0.0
    next_tick = a.interval_s
    for request_id, t in enumerate(arrivals):
        while next_tick <= t:
            advance_to(next_tick)
            serving = np.flatnonzero(ready <= next_tick)
            in_flight = int(pool.outstanding[serving].sum())
            want, have = a.desired(in_flight), len(started)
            if want > have:
                for i in np.flatnonzero(np.isinf(ready))[: want - have].tolist():
                    ready[i] = next_tick + a.startup_s
                    started[i] = next_tick
                last_change = next_tick
            elif want < have and next_tick - last_change >= a.cooldown_s:
                order = serving[np.argsort(pool.outstanding[serving], kind="stable")]
                for i in order[: min(have - want, len(serving) - 1)].tolist():  # keep one
                    ready[i] = math.inf
                    paid.append((i, started.pop(i), next_tick))
                last_change = next_tick
            ticks.append((next_tick, int((ready <= next_tick).sum()), len(started)))
            next_tick += a.interval_s
        advance_to(t)
        serving = np.flatnonzero(ready <= t)
        if serving.size == 0:  # every instance still loading: the earliest takes it
            serving = np.array([int(np.argmin(ready))])
        i = int(serving[pool.router.choose(request_id, _Serving(pool, serving))])
        pool.send(i, request_id, t)
        if not in_busy[i]:
            in_busy[i] = True
            heapq.heappush(busy, (max(t, float(ready[i])), i))
    for i in range(a.max_instances):
        pool.advance(i, None)
    paid += [(i, start, end_s) for i, start in started.items()]
    results = [run.result() for run in pool.runs]
    fleet = FleetResult(records=label_instances(results, workload.num_requests), instances=results)
    paid = _with_drain(paid, fleet)
    tick = np.array([x[0] for x in ticks])
    return AutoscaledResult(
        fleet, tuple(paid), tick, np.array([x[1] for x in ticks]), np.array([x[2] for x in ticks])
    )


def _with_drain(
    paid: list[tuple[int, float, float]], fleet: FleetResult
) -> list[tuple[int, float, float]]:
    """Each paid interval extended to the last finish of the requests it took."""
    by_instance: dict[int, list[int]] = {}
    for k, (i, _, _) in enumerate(paid):
        by_instance.setdefault(i, []).append(k)
    for ks in by_instance.values():
        ks.sort(key=lambda k: paid[k][1])
    ends = [end for _, _, end in paid]
    for r in fleet.records:
        ks = by_instance.get(r.instance_id if r.instance_id is not None else -1, [])
        starts = [paid[k][1] for k in ks]
        j = bisect.bisect_right(starts, r.arrival_s) - 1
        if j >= 0 and r.finish_s is not None:
            k = ks[j]
            ends[k] = max(ends[k], r.finish_s)
    return [(i, start, end) for (i, start, _), end in zip(paid, ends, strict=True)]
