"""Measured beside predicted: the same summary keys from two runs, with relative errors.

Both sides are flat summaries with `llmsizer.metrics.summarize` keys: a point of
`llmsizer bench --json`, the output of `llmsizer simulate --json` (the summary plus
`scenario`) or of `predict --json`. `describe_point` names a point by its load whichever
tool wrote it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

COMPARED: tuple[tuple[str, str], ...] = (
    ("mean_ttft_ms", "mean TTFT (ms)"),
    ("median_ttft_ms", "median TTFT (ms)"),
    ("mean_tpot_ms", "mean TPOT (ms)"),
    ("mean_itl_ms", "mean ITL (ms)"),
    ("mean_e2el_ms", "mean E2E latency (ms)"),
    ("p99_e2el_ms", "P99 E2E latency (ms)"),
    ("request_throughput", "request throughput (req/s)"),
    ("output_throughput", "output throughput (tok/s)"),
)
BAR_METRICS = ("mean_ttft_ms", "mean_tpot_ms", "request_throughput")
_STD_OF = {
    "mean_ttft_ms": "std_ttft_ms",
    "mean_tpot_ms": "std_tpot_ms",
    "mean_e2el_ms": "std_e2el_ms",
}


@dataclass(frozen=True, slots=True)
class Comparison:
    """One metric of one point: measured, predicted (same units), relative error, and for a
    mean the standard error of the measured one (std / sqrt(requests): how far chance alone
    moves it), or None."""

    label: str
    metric: str
    name: str
    measured: float
    predicted: float
    measured_se: float | None = None

    @property
    def error(self) -> float:
        """predicted / measured - 1 (nan when the measured value is 0)."""
        return self.predicted / self.measured - 1.0 if self.measured else math.nan


def compare_summaries(
    measured: Mapping[str, Any], predicted: Mapping[str, Any], label: str
) -> list[Comparison]:
    """Every `COMPARED` metric both summaries hold, in `COMPARED` order."""
    return [
        Comparison(
            label, key, name, float(measured[key]), float(predicted[key]), _se(measured, key)
        )
        for key, name in COMPARED
        if _number(measured.get(key)) and _number(predicted.get(key))
    ]


def compare_points(
    measured: Sequence[Mapping[str, Any]], predicted: Sequence[Mapping[str, Any]], source: str
) -> list[Comparison]:
    """`compare_summaries` of each measured point and its prediction, in order; a ValueError
    naming the point (of the file `source`) when the two are not of the same load or share
    no metric."""
    rows = []
    for number, (m, p) in enumerate(zip(measured, predicted, strict=True), start=1):
        mismatch = load_mismatch(m, p)
        if mismatch is not None:
            raise ValueError(f"point {number} of {source}: {mismatch}; pair points of one load")
        point_rows = compare_summaries(m, p, describe_point(m))
        if not point_rows:
            raise ValueError(
                f"point {number} of {source}: no metric ({', '.join(BAR_METRICS)}, ...) is a "
                "number on both sides; is it a bench, simulate or predict --json file?"
            )
        rows += point_rows
    return rows


def pool_repeats(rows: Sequence[Comparison]) -> list[Comparison]:
    """One row per point and metric measured more than once (rows with the same label): the
    mean of the measured and of the predicted values over the repeats, and as the measured
    standard error the spread between repeats / sqrt(repeats), which holds the machine's
    drift from one repeat to the next as well as sampling noise. Points measured once keep
    their row. Order: first appearance."""
    groups: dict[tuple[str, str], list[Comparison]] = {}
    for r in rows:
        groups.setdefault((r.label, r.metric), []).append(r)
    out: list[Comparison] = []
    for (label, metric), group in groups.items():
        k = len(group)
        if k == 1:
            out.append(group[0])
            continue
        measured = [r.measured for r in group]
        spread = statistics.stdev(measured) / math.sqrt(k)
        predicted = statistics.fmean(r.predicted for r in group)
        name = f"{label}, mean of {k} runs"
        out.append(
            Comparison(name, metric, group[0].name, statistics.fmean(measured), predicted, spread)
        )
    return out


def _se(summary: Mapping[str, Any], key: str) -> float | None:
    std, n = summary.get(_STD_OF.get(key, "")), summary.get("completed")
    if _number(std) and _number(n) and n:
        return float(std) / math.sqrt(float(n))
    return None


def _number(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def describe_point(d: Mapping[str, Any]) -> str:
    """The load of a bench, simulate or predict summary in a few words: `concurrency 4`,
    `Poisson 2 req/s`, `offline`, or `run` when it says nothing about its load."""
    workload = _mapping(_mapping(d.get("scenario")).get("workload"))
    arrival = workload.get("arrival")
    concurrency = d.get("max_concurrency", d.get("concurrency"))
    rate = _finite(d.get("request_rate"))
    if arrival in ("poisson", "gamma"):
        rate = _finite(workload.get("request_rate"))
    elif arrival == "closed_loop":
        concurrency = workload.get("concurrency")
    if rate is not None:
        burst = _finite(d.get("burstiness", workload.get("burstiness")))
        kind = "Poisson" if burst in (None, 1.0) else f"gamma (burstiness {burst:g})"
        return f"{kind} {rate:g} req/s"
    if _number(concurrency):
        return f"concurrency {int(concurrency)}"
    if d.get("offline") or arrival == "burst":
        return "offline"
    return "run"


def load_mismatch(measured: Mapping[str, Any], predicted: Mapping[str, Any]) -> str | None:
    """Why a measured and a predicted point are not the same load (`Poisson 1 req/s` vs
    `Poisson 6 req/s`), or None when they are, or when either does not say."""
    m, p = describe_point(measured), describe_point(predicted)
    if "run" in (m, p) or m == p:
        return None
    return f"measured at {m} but predicted at {p}"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _finite(value: Any) -> float | None:
    """A rate as a float; None for none, vLLM's "inf" (a closed loop or a burst), or
    anything that is not a finite number."""
    try:
        number = float(value) if _number(value) or isinstance(value, str) else math.nan
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def within(rows: Sequence[Comparison], tolerance: float, metrics: Sequence[str]) -> bool:
    """Whether every row of `metrics` has |error| <= `tolerance` (a fraction)."""
    return all(abs(r.error) <= tolerance for r in rows if r.metric in metrics)


def markdown_table(rows: Sequence[Comparison], tolerance: float | None = None) -> str:
    """A GitHub markdown table, one row per point and metric; with a `tolerance`, a last
    column marks the `BAR_METRICS` rows within it."""
    head = "| point | metric | measured (± 1 se) | predicted | error |"
    rule = "|---|---|---:|---:|---:|"
    if tolerance is not None:
        head += f" within {100 * tolerance:g} % |"
        rule += ":-:|"
    lines = [head, rule]
    for r in rows:
        line = (
            f"| {r.label} | {r.name} | {_measured(r)} | {_fmt(r.predicted)} | "
            f"{100 * r.error:+.1f} % |"
        )
        if tolerance is not None:
            mark = (
                ("yes" if abs(r.error) <= tolerance else "**no**")
                if r.metric in BAR_METRICS
                else ""
            )
            line += f" {mark} |"
        lines.append(line)
    return "\n".join(lines) + "\n"


def _measured(r: Comparison) -> str:
    if r.measured_se is None:
        return _fmt(r.measured)
    return f"{_fmt(r.measured)} ± {_fmt(r.measured_se)} ({100 * r.measured_se / r.measured:.0f} %)"


def _fmt(value: float) -> str:
    return f"{value:,.1f}" if abs(value) >= 10 else f"{value:,.3g}"
