"""A day replayed on an autoscaled fleet and on a fleet fixed at the peak.

The day's arrivals follow a daily profile scaled to a peak: `rate(t) = peak x profile(t)`,
`profile` a fraction of the peak per hour (piecewise constant, repeated when the replay is
longer than the profile). A unit-rate arrival pattern (Poisson, or a trace's own gaps
divided by their mean, tiled as often as needed, so its burstiness is kept) is mapped
through the inverse of the cumulative rate: the k-th arrival is at the time the expected
number of arrivals reaches the pattern's k-th unit time (time-rescaling of a point process).
Lengths come from the trace in its order (tiled), or are fixed.

Both fleets run the same requests behind the same router; the report gives per hour the
load, the instances paid for, p95 TTFT and the fraction of requests within the limits (SLO
attainment), and over the day GPU-hours and cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from llmsizer.fleet.autoscale import AutoscaledResult, Autoscaler, simulate_autoscaled
from llmsizer.fleet.fleet import simulate_fleet
from llmsizer.records import RequestRecord
from llmsizer.sim import Engine
from llmsizer.workload import Workload

HOUR_S = 3600.0
# An assumed chat-service day (not a measurement): 20 % of the peak at 04:00, the peak at
# 16:00, rate(h) = 0.2 + 0.8 sin^2(pi (h - 4) / 24), sampled at each hour's middle.
CHAT_PROFILE = tuple(
    round(0.2 + 0.8 * math.sin(math.pi * (h + 0.5 - 4) / 24) ** 2, 4) for h in range(24)
)
PROFILES = {"chat": CHAT_PROFILE, "flat": (1.0,) * 24}


def parse_profile(text: str) -> tuple[float, ...]:
    """A named profile (`chat`, `flat`) or fractions of the peak per hour, comma separated
    (each in [0, 1], at least one > 0)."""
    if text in PROFILES:
        return PROFILES[text]
    try:
        values = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        values = ()
    if not values:
        raise ValueError(
            f"a daily profile is {' or '.join(PROFILES)}, or fractions of the peak per hour "
            f"such as 0.2,0.5,1,0.7; got {text!r}"
        )
    if not all(0.0 <= v <= 1.0 for v in values) or max(values) == 0.0:
        raise ValueError(
            f"a daily profile's hourly fractions of the peak must be in [0, 1], at least "
            f"one above 0; got {text!r}"
        )
    return values


def day_arrivals(
    unit_arrival_s: np.ndarray, profile: tuple[float, ...], peak_rps: float, hours: float
) -> np.ndarray:
    """The unit-rate pattern's times mapped onto `peak x profile` over `hours` (module
    docstring); arrivals past the end are dropped. Seconds, increasing."""
    if not peak_rps > 0 or not hours > 0:
        raise ValueError(f"a day needs peak_rps > 0 and hours > 0, got {peak_rps}, {hours}")
    edges = np.arange(math.ceil(hours) + 1) * HOUR_S
    rates = peak_rps * np.array([profile[h % len(profile)] for h in range(len(edges) - 1)])
    expected = np.concatenate(([0.0], np.cumsum(rates * HOUR_S)))
    end = hours * HOUR_S
    total = float(np.interp(end, edges, expected))
    u = unit_arrival_s[unit_arrival_s < total]
    # invert the cumulative rate, hour by hour (flat stretches, rate 0, are skipped)
    h = np.searchsorted(expected, u, side="right") - 1
    return edges[h] + (u - expected[h]) / np.maximum(rates[np.minimum(h, len(rates) - 1)], 1e-300)


def unit_pattern(gaps_s: np.ndarray | None, num: int, rng: np.random.Generator) -> np.ndarray:
    """`num` unit-rate arrival times: a trace's gaps divided by their mean and tiled, or
    Poisson (`gaps_s` None)."""
    if gaps_s is None or gaps_s.shape[0] == 0 or not gaps_s.mean() > 0:
        return np.cumsum(rng.exponential(1.0, num))
    unit = gaps_s / gaps_s.mean()
    return np.cumsum(np.resize(unit, num))


def day_workload(
    trace: Workload | None,
    profile: tuple[float, ...],
    peak_rps: float,
    hours: float,
    seed: int = 0,
    lengths: tuple[int, int] | None = None,
) -> Workload:
    """The day's requests: arrivals from `trace`'s pattern (Poisson when None) under the
    profile, lengths from the trace in order (tiled) or `lengths` (prompt, output) fixed."""
    rng = np.random.default_rng(seed)
    expected = peak_rps * HOUR_S * sum(profile[h % len(profile)] for h in range(math.ceil(hours)))
    num = int(expected * 1.2 + 10 * math.sqrt(expected) + 10)
    gaps = None
    if trace is not None and trace.arrival_s is not None:
        gaps = np.diff(trace.arrival_s)
    arrival_s = day_arrivals(unit_pattern(gaps, num, rng), profile, peak_rps, hours)
    n = arrival_s.shape[0]
    if trace is not None:
        prompt, output = (
            np.resize(trace.num_prompt_tokens, n),
            np.resize(trace.num_output_tokens, n),
        )
        source = f"{trace.source or 'trace'} under a daily profile, peak {peak_rps:g} req/s"
    elif lengths is not None:
        prompt, output = np.full(n, lengths[0]), np.full(n, lengths[1])
        source = f"Poisson under a daily profile, peak {peak_rps:g} req/s"
    else:
        raise ValueError("a day needs its lengths: a trace, or a prompt and output length")
    return Workload(
        prompt.astype(np.int64), output.astype(np.int64), arrival_s=arrival_s, source=source
    )


@dataclass(frozen=True, slots=True)
class Hourly:
    """One fleet's day, per hour: p95 TTFT (s, nan in an hour without requests), fraction of
    requests within the limits, mean instances paid for over the hour's span."""

    p95_ttft_s: np.ndarray
    attainment: np.ndarray
    instances: np.ndarray
    instance_hours: float
    attainment_day: float


@dataclass(frozen=True, slots=True)
class DayResult:
    """Requests per hour, the hours each hour's row covers (1, less for a last partial
    hour), and the fixed and autoscaled fleets' days."""

    hours: int
    requests: np.ndarray
    span_h: np.ndarray
    fixed: Hourly
    autoscaled: Hourly
    autoscaled_run: AutoscaledResult


def within(records: list[RequestRecord], ttft_s: float | None, tpot_s: float | None) -> np.ndarray:
    """Per record: whether it met every limit given (an unfinished request never does)."""
    ok = np.ones(len(records), dtype=bool)
    for i, r in enumerate(records):
        if (
            r.ttft_s is None
            or (ttft_s is not None and r.ttft_s > ttft_s)
            or (tpot_s is not None and r.tpot_s is not None and r.tpot_s > tpot_s)
        ):
            ok[i] = False
    return ok


def _hourly(
    records: list[RequestRecord], hours: int, ok: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    hour = np.minimum(np.array([int(r.arrival_s // HOUR_S) for r in records], dtype=int), hours - 1)
    ttft = np.array([math.inf if r.ttft_s is None else r.ttft_s for r in records])
    p95, share = np.full(hours, np.nan), np.full(hours, np.nan)
    for h in range(hours):
        mine = hour == h
        if mine.any():
            p95[h] = float(np.percentile(ttft[mine], 95))
            share[h] = float(ok[mine].mean())
    return p95, share


def instances_per_hour(paid_s: tuple[tuple[int, float, float], ...], hours: int) -> np.ndarray:
    """Mean instances paid for in each hour, from paid (instance, start, end) intervals."""
    out = np.zeros(hours)
    for _, start, end in paid_s:
        for h in range(int(start // HOUR_S), min(hours, int(end // HOUR_S) + 1)):
            lo, hi = max(start, h * HOUR_S), min(end, (h + 1) * HOUR_S)
            out[h] += max(0.0, hi - lo) / HOUR_S
    return out


def replay_day(
    engine: Engine,
    workload: Workload,
    num_fixed: int,
    autoscaler: Autoscaler,
    *,
    hours: float,
    router: str = "least_outstanding",
    ttft_s: float | None = None,
    tpot_s: float | None = None,
    seed: int = 0,
) -> DayResult:
    """Run the day on `num_fixed` instances and on the autoscaled fleet (module docstring).
    The fixed fleet is paid for the whole `hours`; the autoscaled one per its intervals."""
    if num_fixed < 1:
        raise ValueError(f"the fixed fleet needs at least 1 instance, got {num_fixed}")
    n_hours = math.ceil(hours)
    assert workload.arrival_s is not None
    hour = np.minimum((workload.arrival_s // HOUR_S).astype(int), n_hours - 1)
    requests = np.bincount(hour, minlength=n_hours)[:n_hours]
    span = np.minimum(1.0, hours - np.arange(n_hours))
    fixed = simulate_fleet([engine] * num_fixed, workload, router, seed=seed).records
    auto = simulate_autoscaled(engine, workload, autoscaler, router, seed=seed)
    days = []
    for records, paid in ((fixed, None), (auto.fleet.records, auto.paid_s)):
        ok = within(records, ttft_s, tpot_s)
        p95, share = _hourly(records, n_hours, ok)
        if paid is None:
            per_hour = np.full(n_hours, float(num_fixed))
            total = num_fixed * hours
        else:
            per_hour = instances_per_hour(paid, n_hours) / span
            total = auto.instance_seconds / HOUR_S
        share_day = float(ok.mean()) if len(records) else math.nan
        days.append(Hourly(p95, share, per_hour, total, share_day))
    return DayResult(n_hours, requests, span, days[0], days[1], auto)
