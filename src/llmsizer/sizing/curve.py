"""Latency-throughput curves and their Pareto points: the course's "throughput-optimal vs
latency-optimal" trade-off.

A curve is one configuration's latency percentiles against its request rate per GPU: the
request alone (batch 1, rate 0: latency-optimal) and Poisson probes up to 95 % of capacity
(throughput-optimal). The Pareto points of a GPU are the points of all its searched
configurations that no other point beats on both rate per GPU and the main latency (the
first limited metric: TTFT, else TPOT, else E2E).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from llmsizer.sizing.limits import METRICS, Limits, Metric
from llmsizer.sizing.probe import Point, Probe
from llmsizer.sizing.search import ConfigResult, SearchSpace

CURVE = (0.95, 0.9, 0.8, 0.6, 0.4)  # fractions of capacity on the latency curve
ADAPTIVE_POINTS = 3  # more curve points where the latency jumps most (`draw_curve`)


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """One load of one configuration. Rates in req/s; latencies in seconds at the limits'
    percentiles (p95 by default); `meets` is True when every limit is met."""

    label: str
    rate_per_instance: float
    rate_per_gpu: float
    ttft_s: float
    tpot_s: float
    e2el_s: float
    meets: bool

    def latency_s(self, metric: Metric) -> float:
        value: float = getattr(self, f"{metric.value}_s")
        return value


def main_metric(limits: Limits) -> Metric:
    """The latency a Pareto table ranks by: the first limited metric, TTFT without limits."""
    return limits.active[0] if limits.active else Metric.TTFT


def curve_points(
    result: ConfigResult, limits: Limits, *, all_points: bool = False
) -> list[CurvePoint]:
    """The batch-1 point then the curve's probes (or every probe) by rising rate."""
    g = result.config.gpus_per_instance
    label = result.config.label()
    out: list[CurvePoint] = []
    if result.batch1 is not None:
        b = result.batch1
        meets = all(b.latency_s(lim.metric) <= lim.limit_s for lim in limits.limits())
        out.append(CurvePoint(label, 0.0, 0.0, b.ttft_s, b.tpot_s, b.e2el_s, meets))
    for p in sorted(result.points if all_points else result.curve, key=lambda p: p.offered_rate):
        values = {m: limits.value_s(p.latencies, m) for m in METRICS}
        out.append(
            CurvePoint(
                label,
                p.offered_rate,
                p.offered_rate / g,
                values[Metric.TTFT],
                values[Metric.TPOT],
                values[Metric.E2EL],
                limits.met_by(p.latencies),
            )
        )
    return out


def pareto(points: Iterable[CurvePoint], metric: Metric) -> list[CurvePoint]:
    """Points no other point beats on both a higher rate per GPU and a lower `metric`,
    by rising rate per GPU (ties on both: the first one)."""
    ordered = sorted(points, key=lambda p: (-p.rate_per_gpu, p.latency_s(metric)))
    front: list[CurvePoint] = []
    best = float("inf")
    for p in ordered:
        if p.latency_s(metric) < best:
            front.append(p)
            best = p.latency_s(metric)
    return front[::-1]


def gpu_pareto(results: Sequence[ConfigResult], limits: Limits) -> list[CurvePoint]:
    """The Pareto points over every point simulated for these configurations."""
    points = [p for r in results for p in curve_points(r, limits, all_points=True)]
    return pareto(points, main_metric(limits))


def draw_curve(space: SearchSpace, result: ConfigResult, probe: Probe) -> ConfigResult:
    """The winner's latency-throughput curve: probes at `CURVE` fractions of capacity, the
    search's own probes (already simulated, near the limit), and `ADAPTIVE_POINTS` more,
    each halving the gap between the two neighbours whose latency jumps the most: the
    knee gets the points."""
    if not space.online or not space.curves:
        return replace(result, points=tuple(probe.points))
    for f in CURVE:
        probe.at_rate(f * probe.capacity())
    metric = space.limits.active[0] if space.limits.active else Metric.TTFT

    def lat(point: Point) -> float:
        return space.limits.value_s(point.latencies, metric)

    for _ in range(ADAPTIVE_POINTS):
        ordered = probe.points
        jumps = [(lat(b) / max(lat(a), 1e-12), a, b) for a, b in itertools.pairwise(ordered)]
        if not jumps:
            break
        _, a, b = max(jumps, key=lambda j: j[0])
        probe.at_rate(0.5 * (a.offered_rate + b.offered_rate))
    curve = tuple(probe.points)
    return replace(result, curve=curve, points=curve)
