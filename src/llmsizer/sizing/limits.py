"""`Limits`: the latency limits a plan must meet, each at its own percentile, in seconds.

A limit is met when the given percentile of that latency over the simulated requests is at or
below it: `p95 TTFT <= 3 s`. Limits are typed: a `Metric`, a limit in seconds and a
percentile, judged against `Latencies` (seconds, by metric and percentile). The summary's
millisecond keys (`p95_ttft_ms`, vLLM's) are read once, in `Latencies.from_summary`, so a
simulated run and a benchmark run are judged the same way, and a percentile the run did not
compute is an error, never a silent pass or fail.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from llmsizer.metrics import percentile_key
from llmsizer.units import MS


class Metric(StrEnum):
    """A latency a limit can be put on (vLLM's names)."""

    TTFT = "ttft"
    TPOT = "tpot"
    E2EL = "e2el"

    @property
    def label(self) -> str:
        """`TTFT`, `TPOT`, `E2E latency`."""
        return LABELS[self]


METRICS = tuple(Metric)
Binding = Metric | Literal["throughput"]
"""What stops a configuration's rate: a limited latency, or its throughput."""
LABELS = {Metric.TTFT: "TTFT", Metric.TPOT: "TPOT", Metric.E2EL: "E2E latency"}


def summary_key(metric: Metric, percentile: float) -> str:
    """The summary key of a latency percentile: `p95_ttft_ms`."""
    return f"{percentile_key(percentile)}_{metric.value}_ms"


@dataclass(frozen=True, slots=True)
class Latencies:
    """Latency percentiles of one run in seconds, by (metric, percentile)."""

    values_s: Mapping[tuple[Metric, float], float]

    @classmethod
    def from_summary(cls, summary: Mapping[str, float], percentiles: Iterable[float]) -> Latencies:
        """The `percentiles` of every metric from a `llmsizer.metrics.summarize` summary (ms);
        a summary without them is a `KeyError` naming the key. A run whose requests all
        stop at their first token has no TPOT (vLLM leaves it out): no token waits after the
        first, so it counts as 0 and a TPOT limit holds."""
        values: dict[tuple[Metric, float], float] = {}
        for metric in METRICS:
            for p in percentiles:
                key = summary_key(metric, p)
                if key not in summary and metric is Metric.TPOT:
                    values[metric, float(p)] = 0.0
                    continue
                if key not in summary:
                    raise KeyError(f"the run's summary has no {key}")
                values[metric, float(p)] = summary[key] * MS
        return cls(values)

    def at(self, metric: Metric, percentile: float) -> float:
        """Seconds; a `KeyError` when the run did not compute that percentile."""
        try:
            return self.values_s[metric, float(percentile)]
        except KeyError:
            raise KeyError(f"no {percentile_key(percentile)} {metric.label} in this run") from None


@dataclass(frozen=True, slots=True)
class Limit:
    """One limit: the `percentile` of `metric` must be at most `limit_s` seconds."""

    metric: Metric
    limit_s: float
    percentile: float = 95.0

    def __post_init__(self) -> None:
        if not self.limit_s > 0:
            raise ValueError(f"{self.metric} limit must be > 0 s, got {self.limit_s}")
        if not 0 < self.percentile <= 100:
            raise ValueError(f"{self.metric} percentile must be in (0, 100], got {self.percentile}")

    def value_s(self, latencies: Latencies) -> float:
        """The judged latency of a run, seconds."""
        return latencies.at(self.metric, self.percentile)

    def ratio(self, latencies: Latencies) -> float:
        """Judged value / limit; <= 1 means met."""
        return self.value_s(latencies) / self.limit_s

    def describe(self) -> str:
        """`p95 TTFT <= 3000 ms`."""
        return f"{percentile_key(self.percentile)} {self.metric.label} <= {self.limit_s / MS:g} ms"


@dataclass(frozen=True, slots=True)
class Limits:
    """Latency limits (seconds, `None`: none) and the percentile (0-100] each is judged at."""

    ttft_s: float | None = None
    tpot_s: float | None = None
    e2el_s: float | None = None
    ttft_percentile: float = 95.0
    tpot_percentile: float = 95.0
    e2el_percentile: float = 95.0

    def __post_init__(self) -> None:
        for metric in METRICS:
            p = self.percentile(metric)
            if not 0 < p <= 100:
                raise ValueError(f"{metric} percentile must be in (0, 100], got {p}")
        self.limits()  # each given limit validates itself

    def limit(self, metric: Metric) -> Limit | None:
        """The limit on `metric`, or `None` when it has none."""
        value: float | None = getattr(self, f"{metric.value}_s")
        return None if value is None else Limit(metric, value, self.percentile(metric))

    def limits(self) -> tuple[Limit, ...]:
        """Every limit given, in `METRICS` order."""
        return tuple(lim for m in METRICS if (lim := self.limit(m)) is not None)

    def percentile(self, metric: Metric) -> float:
        """The percentile `metric` is judged (and reported) at, with or without a limit."""
        value: float = getattr(self, f"{metric.value}_percentile")
        return value

    @property
    def active(self) -> tuple[Metric, ...]:
        """The metrics that have a limit, in `METRICS` order."""
        return tuple(lim.metric for lim in self.limits())

    @property
    def percentiles(self) -> tuple[float, ...]:
        """Every percentile a run must report to judge these limits (and the median)."""
        return tuple(sorted({50.0, *(self.percentile(m) for m in METRICS)}))

    def key(self, metric: Metric) -> str:
        """The summary key reported for `metric`: `p95_ttft_ms` (for reports)."""
        return summary_key(metric, self.percentile(metric))

    def value_s(self, latencies: Latencies, metric: Metric) -> float:
        """The reported percentile of `metric` in a run, seconds."""
        return latencies.at(metric, self.percentile(metric))

    def ratios(self, latencies: Latencies) -> dict[Metric, float]:
        """Judged value / limit for every limit; <= 1 means met."""
        return {lim.metric: lim.ratio(latencies) for lim in self.limits()}

    def met_by(self, latencies: Latencies) -> bool:
        return all(r <= 1.0 for r in self.ratios(latencies).values())

    def binding(self, latencies: Latencies) -> Metric | None:
        """The limit closest to (or furthest over) its bound, or `None` without limits."""
        ratios = self.ratios(latencies)
        return max(ratios, key=lambda m: ratios[m]) if ratios else None

    def describe(self, metric: Metric) -> str:
        """`p95 TTFT <= 3000 ms`; a `ValueError` for a metric without a limit."""
        lim = self.limit(metric)
        if lim is None:
            raise ValueError(f"no {metric.label} limit")
        return lim.describe()

    def scaled(self, factor: float) -> Limits:
        """Every limit multiplied by `factor` (a tighter or looser version of these limits)."""
        given = {m: getattr(self, f"{m.value}_s") for m in METRICS}
        return Limits(
            **{f"{m.value}_s": None if v is None else v * factor for m, v in given.items()},
            ttft_percentile=self.ttft_percentile,
            tpot_percentile=self.tpot_percentile,
            e2el_percentile=self.e2el_percentile,
        )
