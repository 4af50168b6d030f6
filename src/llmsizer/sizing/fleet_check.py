"""`plan --router`: the plan's fleet simulated whole, behind a router, at the planning load.

`plan` sizes instances from one instance at `load / N` req/s of Poisson arrivals: what
random routing gives each instance, and an even split of the load. `check_plan_fleet`
simulates the winner's N instances together at the whole planning load, arrivals Poisson
(the probes' seed), behind `router`, and judges the fleet's percentiles against the limits.
When they are missed it adds instances one at a time (up to half again the plan's) until
they hold, and says why. Pipeline-parallel instances run as `pp` virtual engines each, as
the probes run them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from llmsizer.fleet import ROUTERS, simulate_fleet
from llmsizer.metrics import summarize
from llmsizer.sizing.limits import Latencies
from llmsizer.sizing.plan import Efficiency, _efficiency_function, search_space
from llmsizer.sizing.probe import WARMUP_FRACTION
from llmsizer.sizing.result import PlanResult
from llmsizer.sizing.search import make_probe
from llmsizer.workload import Workload, poisson_arrivals

REQUESTS_PER_INSTANCE = 300  # Poisson requests simulated per instance of the fleet
MIN_REQUESTS, MAX_REQUESTS = 3000, 30_000
MAX_EXTRA = 0.5  # add at most half again the plan's instances


@dataclass(frozen=True, slots=True)
class FleetPoint:
    """The fleet of `num_instances` at the planning load: its judged latencies (seconds),
    whether they meet every limit, and the busiest instance's share over the mean."""

    num_instances: int
    latencies: Latencies
    meets: bool
    imbalance: float


@dataclass(frozen=True, slots=True)
class FleetCheck:
    """What the whole-fleet check found: every fleet size tried (the plan's first), the
    instances it recommends (`None` when even `MAX_EXTRA` more miss), and why, in words."""

    router: str
    planned_instances: int
    points: tuple[FleetPoint, ...]
    num_instances: int | None
    reason: str


def check_plan_router(router: str) -> None:
    """Refuse, before any search, a router `plan` cannot check its fleet behind: an unknown
    name, or prefix affinity (a plan's requests are lengths only, without shared prefixes)."""
    if router not in ROUTERS:
        raise ValueError(f"unknown router {router!r}; choose one of {', '.join(ROUTERS)}")
    if router == "prefix":
        others = ", ".join(r for r in ROUTERS if r != "prefix")
        raise ValueError(
            "router 'prefix' routes by shared prompt prefixes, and a plan's requests carry "
            f"none (they are lengths, not texts or hash_ids): choose another router ({others})"
        )


def check_plan_fleet(
    result: PlanResult, router: str, efficiency: Efficiency | None = None, seed: int = 0
) -> FleetCheck:
    """Simulate the plan's winning fleet behind `router` (module docstring)."""
    winner = result.winner
    if winner is None or winner.best is None or winner.sizing is None:
        raise ValueError("the plan found no configuration within the limits: nothing to check")
    space = search_space(result.usecase)
    probe = make_probe(space, winner.best.config, _efficiency_function(efficiency))
    planned = winner.sizing.num_instances
    pp = probe.pp
    lengths = probe.lengths
    points: list[FleetPoint] = []
    for n in range(planned, math.floor(planned * (1 + MAX_EXTRA)) + 1):
        num = min(MAX_REQUESTS, max(MIN_REQUESTS, REQUESTS_PER_INSTANCE * n))
        idx = np.arange(num) % lengths.num_requests
        arrivals = poisson_arrivals(num, result.load_rps, np.random.default_rng(seed))
        workload = Workload(lengths.prompt[idx], lengths.output[idx], arrival_s=arrivals)
        fleet = simulate_fleet([probe.engine] * (n * pp), workload, router, seed=seed)
        records = fleet.records[int(WARMUP_FRACTION * num) :]
        summary = summarize(records, percentiles=result.limits.percentiles)
        latencies = Latencies.from_summary(summary, result.limits.percentiles)
        counts = fleet.num_requests_per_instance
        meets = result.limits.met_by(latencies)
        points.append(FleetPoint(n, latencies, meets, float(counts.max() / counts.mean())))
        if meets:
            break
    return FleetCheck(
        router, planned, tuple(points), _chosen(points), _reason(result, router, points)
    )


def _chosen(points: list[FleetPoint]) -> int | None:
    return next((p.num_instances for p in points if p.meets), None)


def _reason(result: PlanResult, router: str, points: list[FleetPoint]) -> str:
    limits = result.limits
    first, last = points[0], points[-1]

    def judged(p: FleetPoint) -> str:
        return ", ".join(
            f"{lim.describe()}: {lim.value_s(p.latencies) * 1e3:,.0f} ms" for lim in limits.limits()
        )

    if first.meets:
        return (
            f"Behind {router}, the {first.num_instances} planned instances meet the limits "
            f"at {result.load_rps:g} req/s ({judged(first)})."
        )
    missed = limits.binding(first.latencies)
    what = limits.describe(missed) if missed is not None else "a limit"
    head = (
        f"Behind {router}, {first.num_instances} instances miss {what} at "
        f"{result.load_rps:g} req/s ({judged(first)}; busiest instance "
        f"{first.imbalance:.2f}x the mean load): the router queues requests that the "
        f"plan's even split of Poisson arrivals does not."
    )
    if last.meets:
        return f"{head} {last.num_instances} instances meet them ({judged(last)})."
    return f"{head} Even {last.num_instances} instances miss them ({judged(last)})."
