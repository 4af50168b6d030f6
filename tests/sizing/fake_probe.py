"""A probe on a latency curve known exactly, shared by the rate-search tests."""

from __future__ import annotations

from collections.abc import Callable

from llmsizer.sizing.limits import Latencies, Limits, Metric
from llmsizer.sizing.probe import Point

CAPACITY = 10.0


class FakeProbe:
    """A probe whose p95 TTFT (ms) at a rate is `curve(rate)`; counts the probes it runs."""

    def __init__(self, curve: Callable[[float], float]) -> None:
        self.curve = curve
        self.rates: list[float] = []

    def capacity(self) -> float:
        return CAPACITY

    def at_rate(self, rate: float, stop_for: Limits | None = None) -> Point:
        self.rates.append(rate)  # a whole run: never stopped early
        summary = {"p95_ttft_ms": self.curve(rate), "p50_ttft_ms": 0.0}
        latencies = Latencies({(Metric.TTFT, 95.0): self.curve(rate) / 1e3})
        return Point(rate, summary, latencies)

    @property
    def points(self) -> list[Point]:
        return [self.at_rate(r) for r in sorted(set(self.rates))]


def queue(rate: float) -> float:
    """An M/M/1-like TTFT: 100 ms alone, growing as 1 / (1 - utilisation)."""
    return 100.0 / (1.0 - min(rate / CAPACITY, 0.999))
