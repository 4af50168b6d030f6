"""The uncertainty band: the winner re-searched under other assumptions, as a range.

The performance model's efficiency factors are priors or fits, not facts, and a use case's
lengths are averages whose spread matters for percentiles. So the winning configuration is
searched again (same configuration, the same search warm-started at the planned fraction of
capacity) with:

- every efficiency (fraction of peak) times 1 - u and 1 + u (capped at 1), and the fixed
  overheads divided by the same factor: the engine `u` slower and faster than modelled;
- the lengths' other distributions with the same means (`lengths.length_variants`).

The band is the range of instances, GPUs and servers over the base answer and the variants.
A variant under which no rate meets the limits makes the band open-ended (`None` above).
The variants are independent searches: with a sweep (`llmsizer.sweep`) they run side by
side, with the same results.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from llmsizer.instance import DeploymentSpec
from llmsizer.perf import EfficiencyFactors
from llmsizer.sizing.configuration import Sizing
from llmsizer.sizing.lengths import cut_prompts
from llmsizer.sizing.probe import Lengths
from llmsizer.sizing.search import MakeProbe, SearchSpace, SpecEfficiency, evaluate
from llmsizer.sizing.servers import server_for

if TYPE_CHECKING:
    from llmsizer.sweep import Sweep

_FRACTIONS = (
    "gemm_compute_efficiency",
    "gemm_bandwidth_efficiency",
    "attention_compute_efficiency",
    "attention_bandwidth_efficiency",
    "interconnect_efficiency",
)
_TIMES = (
    "collective_hop_latency_s",
    "layer_overhead_s",
    "prefill_layer_overhead_s",
    "step_overhead_s",
    "first_token_delay_s",
    "moe_first_token_delay_s",
)


@dataclass(frozen=True, slots=True)
class Variant:
    """One assumption changed: the rate per instance it allows and what that needs."""

    label: str
    rate: float | None
    sizing: Sizing | None


@dataclass(frozen=True, slots=True)
class Band:
    """The base answer and its variants; ranges over all of them."""

    base: Variant
    variants: tuple[Variant, ...]
    notes: tuple[str, ...] = ()  # variants not tried, and why

    @property
    def all(self) -> tuple[Variant, ...]:
        return (self.base, *self.variants)

    def range_of(self, field: str) -> tuple[int, int | None]:
        """(low, high) of a `Sizing` field; high is `None` when some variant meets no rate."""
        values = [getattr(v.sizing, field) for v in self.all if v.sizing is not None]
        high = None if any(v.sizing is None for v in self.all) else max(values)
        return min(values), high


def scaled_efficiency(factors: EfficiencyFactors, scale: float) -> EfficiencyFactors:
    """Every efficiency times `scale` (at most 1), every fixed time divided by it."""
    if not scale > 0:
        raise ValueError(f"scale must be > 0, got {scale}")
    changes = {name: min(1.0, getattr(factors, name) * scale) for name in _FRACTIONS}
    changes |= {name: getattr(factors, name) / scale for name in _TIMES}
    bounds = EfficiencyFactors.bounds()
    changes = {k: min(v, bounds[k][1]) for k, v in changes.items()}
    return dataclasses.replace(factors, **changes)


def band(
    space: SearchSpace,
    config: DeploymentSpec,
    base: tuple[float, float],
    efficiency: SpecEfficiency,
    uncertainty: float,
    length_variants: Sequence[tuple[str, Lengths]],
    probes: MakeProbe | None = None,
    sweep: Sweep | None = None,
) -> Band:
    """Re-search `config` under each variant (module docstring). `base` is the planned
    (rate, capacity) per instance; each re-search starts at the same fraction of capacity.
    `sweep`: the variants' searches run on it (a process pool or Ray), else here."""
    base_rate, capacity = base
    start = base_rate / capacity
    space = dataclasses.replace(space, stop_early=True)  # a variant shows its rate only
    runs: list[_Run] = []
    if uncertainty > 0:
        for sign, word in ((-1, "slower"), (1, "faster")):
            scaled = _Scaled(efficiency, 1 + sign * uncertainty)
            label = f"efficiency {sign * uncertainty:+.0%} (engine {word})"
            runs.append((label, space, config, scaled, start, probes))
    fitting, notes = _within_budget(length_variants, config)
    for label, lengths in fitting:
        lengths_space = dataclasses.replace(space, lengths=lengths)
        runs.append((label, lengths_space, config, efficiency, start, probes))
    variants = tuple(sweep.map(_variant, runs) if sweep else map(_variant, runs))
    return Band(_as_variant("as planned", space, config, base_rate), variants, notes)


@dataclass(frozen=True, slots=True)
class _Scaled:
    """`efficiency` with every factor scaled (`scaled_efficiency`): a class, not a closure,
    so a process pool can send it."""

    efficiency: SpecEfficiency
    scale: float

    def __call__(self, spec: DeploymentSpec) -> EfficiencyFactors:
        return scaled_efficiency(self.efficiency(spec), self.scale)


# one variant's search: its label and what `evaluate` takes
_Run = tuple[str, SearchSpace, DeploymentSpec, SpecEfficiency, float, MakeProbe | None]


def _within_budget(
    length_variants: Sequence[tuple[str, Lengths]], config: DeploymentSpec
) -> tuple[list[tuple[str, Lengths]], tuple[str, ...]]:
    """The length variants `config`'s engine can run, and a note for each it cannot: without
    chunked prefill a prompt must fit `max_num_batched_tokens`, so longer prompts are cut
    to it, or, when that moves their mean, the variant is left out."""
    engine = config.engine
    if engine.batching != "continuous" or engine.enable_chunked_prefill:
        return list(length_variants), ()
    budget = engine.max_num_batched_tokens
    fitting, notes = [], []
    for label, lengths in length_variants:
        longest = int(lengths.prompt.max())
        if longest <= budget:
            fitting.append((label, lengths))
            continue
        cut = cut_prompts(lengths, budget)
        why = f"prompts up to {longest} tokens, over {config.preset}'s {budget}-token step"
        if cut is None:
            notes.append(f"{label}: not tried ({why} budget without chunked prefill)")
        else:
            fitting.append((f"{label}, prompts cut to {budget}", cut))
    return fitting, tuple(notes)


def _variant(run: _Run) -> Variant:
    label, space, config, efficiency, start, probes = run
    result = evaluate(space, config, efficiency, start, probes)
    return _as_variant(label, space, config, result.rate)


def _as_variant(
    label: str, space: SearchSpace, config: DeploymentSpec, rate: float | None
) -> Variant:
    if rate is None:
        return Variant(label, None, None)
    return Variant(label, rate, Sizing.of(space.load_rps, rate, config, server_for(config.gpu)))
