"""`PlanResult`: what `plan` concludes, as plain values that `explain`, `plan_data` and the
reports read (none of them calls back into the search)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from llmsizer.sizing.configuration import Sizing
from llmsizer.sizing.cost import BusinessView, Cost
from llmsizer.sizing.curve import CurvePoint
from llmsizer.sizing.levers import LeverRow
from llmsizer.sizing.limits import Limits
from llmsizer.sizing.probe import Lengths
from llmsizer.sizing.search import ConfigResult
from llmsizer.sizing.servers import Server
from llmsizer.sizing.uncertainty import Band
from llmsizer.sizing.usecase import UseCase


@dataclass(frozen=True, slots=True)
class Timeline:
    """The winner's engine at its planned load per instance, step by step (sampled):
    seconds, running and waiting requests, fraction of KV blocks in use."""

    rate: float
    time_s: tuple[float, ...]
    num_running: tuple[float, ...]
    num_waiting: tuple[float, ...]
    kv_used: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class CandidatePlan:
    """One GPU type's answer: its best configuration and what it needs, or why none works."""

    gpu: str
    server: Server
    best: ConfigResult | None
    sizing: Sizing | None
    cost: Cost | None
    business: BusinessView | None
    headroom: tuple[tuple[float, Sizing], ...]
    curve: tuple[CurvePoint, ...]
    pareto: tuple[CurvePoint, ...]
    closest: ConfigResult | None
    price_models: tuple[Cost, ...] = ()  # every price model's cost; `cost` is the first
    break_even_utilisation: float | None = None  # on-prem vs cloud (`cost`)

    @property
    def feasible(self) -> bool:
        return self.sizing is not None


@dataclass(frozen=True, slots=True)
class PlanResult:
    """The plan: candidates ranked best first, every configuration's verdict, the winner's
    band and timeline, and the explanation. Rates in req/s, times in seconds."""

    usecase: UseCase
    lengths: Lengths
    limits: Limits
    planning_peak_rps: float
    load_rps: float
    served_rps: float
    ranked_by: str
    candidates: tuple[CandidatePlan, ...]
    results: tuple[ConfigResult, ...]
    band: Band | None = None
    timeline: Timeline | None = None
    explanation: tuple[str, ...] = ()
    arrivals: str = "Poisson arrivals"  # the probes' arrival pattern (`sizing.arrivals`)
    levers: tuple[LeverRow, ...] = ()  # what each lever buys (`sizing.levers`)
    notes: tuple[str, ...] = ()  # warnings: fallbacks the search space runs on

    @property
    def winner(self) -> CandidatePlan | None:
        first = self.candidates[0] if self.candidates else None
        return first if first is not None and first.feasible else None

    def closest(self) -> ConfigResult | None:
        """When nothing meets the limits: the configuration nearest to meeting them."""
        return closest(self.results)


def closest(results: Sequence[ConfigResult]) -> ConfigResult | None:
    """The failed configuration nearest to meeting the limits (smallest `worst_ratio`)."""
    failed = [r for r in results if r.worst_ratio is not None]
    return min(failed, key=lambda r: r.worst_ratio or math.inf) if failed else None
