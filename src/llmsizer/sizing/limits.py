"""`Limits`: the latency limits a plan must meet, each at its own percentile, in seconds.

A limit is met when the given percentile of that latency over the simulated requests is at or
below it: `p95 TTFT <= 3 s`. `None` means no limit. The keys read from a summary are vLLM's
(`p95_ttft_ms`), so a simulated run and a benchmark run are judged the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmsizer.metrics import percentile_key
from llmsizer.units import MS

METRICS = ("ttft", "tpot", "e2el")
LABELS = {"ttft": "TTFT", "tpot": "TPOT", "e2el": "E2E latency"}


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
        for name in METRICS:
            limit, p = self.limit_s(name), self.percentile(name)
            if limit is not None and not limit > 0:
                raise ValueError(f"{name} limit must be > 0 s, got {limit}")
            if not 0 < p <= 100:
                raise ValueError(f"{name} percentile must be in (0, 100], got {p}")

    def limit_s(self, metric: str) -> float | None:
        value: float | None = getattr(self, f"{metric}_s")
        return value

    def percentile(self, metric: str) -> float:
        value: float = getattr(self, f"{metric}_percentile")
        return value

    @property
    def active(self) -> tuple[str, ...]:
        """The metrics that have a limit, in METRICS order."""
        return tuple(m for m in METRICS if self.limit_s(m) is not None)

    @property
    def percentiles(self) -> tuple[float, ...]:
        """Every percentile a summary must carry to judge these limits."""
        return tuple(sorted({50.0, *(self.percentile(m) for m in METRICS)}))

    def key(self, metric: str) -> str:
        """The summary key judged for `metric`: `p95_ttft_ms`."""
        return f"{percentile_key(self.percentile(metric))}_{metric}_ms"

    def value_s(self, summary: dict[str, float], metric: str) -> float:
        """The judged percentile of `metric` in `summary`, in seconds (inf when missing)."""
        return summary.get(self.key(metric), float("inf")) * MS

    def ratios(self, summary: dict[str, float]) -> dict[str, float]:
        """Judged value / limit for every active limit; <= 1 means met."""
        return {m: self.value_s(summary, m) / self._limit(m) for m in self.active}

    def met_by(self, summary: dict[str, float]) -> bool:
        return all(r <= 1.0 for r in self.ratios(summary).values())

    def binding(self, summary: dict[str, float]) -> str | None:
        """The active limit closest to (or furthest over) its bound, or `None` without limits."""
        ratios = self.ratios(summary)
        return max(ratios, key=lambda m: ratios[m]) if ratios else None

    def describe(self, metric: str) -> str:
        """`p95 TTFT <= 3000 ms`."""
        return (
            f"{percentile_key(self.percentile(metric))} {LABELS[metric]} <= "
            f"{self._limit(metric) / MS:g} ms"
        )

    def scaled(self, factor: float) -> Limits:
        """Every limit multiplied by `factor` (a tighter or looser version of these limits)."""
        return Limits(
            **{
                f"{m}_s": None if self.limit_s(m) is None else self._limit(m) * factor
                for m in METRICS
            },
            ttft_percentile=self.ttft_percentile,
            tpot_percentile=self.tpot_percentile,
            e2el_percentile=self.e2el_percentile,
        )

    def _limit(self, metric: str) -> float:
        value = self.limit_s(metric)
        if value is None:
            raise KeyError(f"no {metric} limit")
        return value
