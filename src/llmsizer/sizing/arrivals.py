"""The arrival pattern a plan's probes offer, at unit mean rate (a probe divides by its rate).

- poisson: exponential gaps, CV 1 (the default, the course's assumption);
- gamma: vLLM's `--burstiness` b: gamma gaps of shape b, CV 1/sqrt(b); b < 1 is burstier
  (b = 0.25: CV 2), b > 1 more regular;
- trace: a trace's own inter-arrival gaps, in order, divided by their mean so that the
  pattern runs at the probe's rate: the trace's bursts and lulls, scaled to the peak. When
  a probe needs more requests than the trace has, the gaps repeat.

One pattern per plan, drawn once from the seed: every rate and every configuration sees the
same arrivals, so the search stays a deterministic function of the rate (`probe`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from llmsizer.workload import gamma_arrivals, poisson_arrivals, read_trace

ArrivalKind = Literal["poisson", "gamma", "trace"]


@dataclass(frozen=True, slots=True, eq=False)
class ArrivalPattern:
    """`kind` and its parameter (`burstiness` for gamma, the trace's gaps for trace)."""

    kind: ArrivalKind = "poisson"
    burstiness: float = 1.0
    trace_gaps: np.ndarray = field(default_factory=lambda: np.zeros(0))
    source: str = "Poisson arrivals"

    @classmethod
    def of(cls, kind: ArrivalKind, burstiness: float, trace: Path | None) -> ArrivalPattern:
        """The pattern a use case's load names (module docstring)."""
        if kind == "gamma":
            return cls(kind, burstiness, source=f"gamma arrivals, burstiness {burstiness:g}")
        if kind == "trace":
            assert trace is not None  # the use case checks it
            times = read_trace(trace).arrival_s
            gaps = np.diff(times) if times is not None else np.zeros(0)
            if gaps.size == 0 or not gaps.sum() > 0:
                raise ValueError(f"load.arrival_trace: '{trace}' has no time between arrivals")
            cv = float(gaps.std() / gaps.mean())
            source = f"arrivals of {trace.name} scaled to the rate (gap CV {cv:.2f})"
            return cls(kind, trace_gaps=gaps / gaps.mean(), source=source)
        return cls()

    def unit_arrivals(self, num_requests: int, rng: np.random.Generator) -> np.ndarray:
        """`num_requests` arrival times (s) at a mean rate of 1 req/s."""
        if self.kind == "gamma":
            return gamma_arrivals(num_requests, 1.0, self.burstiness, rng)
        if self.kind == "trace":
            idx = np.arange(max(num_requests - 1, 0)) % self.trace_gaps.size
            out = np.zeros(num_requests)
            np.cumsum(self.trace_gaps[idx], out=out[1:])
            return out
        return poisson_arrivals(num_requests, 1.0, rng)


POISSON = ArrivalPattern()  # the default pattern (immutable)
