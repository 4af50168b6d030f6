"""What each lever buys: GPUs needed with the baseline, with each lever alone, and combined.

On one GPU type (the winner's, else the first candidate's), over the use case's other axes
(TP, PP, engine, batch knobs):

    baseline          bf16, dense weights
    <precision>       each other precision the GPU runs well (`perf.levers.search_precisions`)
                      or the use case accepts
    2:4 sparsity      bf16, sparse weights
    speculation       bf16, speculative decoding with the use case's draft tokens k (or 3)
    best combination  the best group found, with every lever that helped alone combined

A lever group the main search settled exactly (`search.group`; none of its configurations
dropped by another group's bound) is read from its results; the others are searched
together in one more branch and bound with an incumbent per group (`per_group`), which
keeps the best of each group exact. Rows the use case does not accept (a precision outside
`candidates.precisions`, sparsity it did not list) are still shown, marked, so the planner
sees what a wider acceptance would buy; the plan's answer uses accepted rows only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from llmsizer.instance import DeploymentSpec
from llmsizer.perf.levers import SPARSITY_QUALITY, quality_note, search_precisions
from llmsizer.sizing.configuration import Sizing
from llmsizer.sizing.search import (
    ConfigResult,
    Group,
    MakeProbe,
    Progress,
    SearchSpace,
    SpecEfficiency,
    Status,
    best_by_gpu,
    group,
    objective,
    search,
)
from llmsizer.sizing.servers import server_for
from llmsizer.sizing.usecase import UseCase
from llmsizer.specs import get_gpu
from llmsizer.sweep import Sweep

BASELINE = "baseline (bf16)"
COMBINED = "best combination"
_NOT_PRECISION = ("2:4 sparsity", "speculation")
LEVER_DRAFT_TOKENS = (3,)  # k tried when the use case names none (vLLM EAGLE examples: 3-5)


@dataclass(frozen=True, slots=True)
class LeverRow:
    """One row: the lever, the best configuration of its group and what it needs (`None`
    when no configuration of the group meets the limits), whether the use case accepts it,
    and the quality note."""

    lever: str
    best: ConfigResult | None
    sizing: Sizing | None
    accepted: bool
    quality: str


def lever_table(
    usecase: UseCase,
    space: SearchSpace,
    results: tuple[ConfigResult, ...],
    gpu: str,
    efficiency: SpecEfficiency,
    progress: Progress | None = None,
    probes: MakeProbe | None = None,
    sweep: Sweep | None = None,
) -> tuple[LeverRow, ...]:
    """The rows of the module docstring for `gpu`; `progress` is called as the searches
    settle configurations (a caller may raise from it to stop the table). `probes` builds
    the probes (the plan's `ProbeCache`: a group searched again reuses its simulations);
    `sweep` runs the searches' parts (`search_parts`)."""
    cands = usecase.candidates
    wanted: dict[str, list[Group]] = {BASELINE: [(gpu, "bf16", False, 0)]}
    own = [p.value for p in search_precisions(get_gpu(gpu))]
    for p in dict.fromkeys(own + cands.precisions_for(gpu)):
        if p != "bf16":
            wanted[p] = [(gpu, p, False, 0)]
    wanted["2:4 sparsity"] = [(gpu, "bf16", True, 0)]
    ks = [k for k in cands.speculative_tokens if k] or list(LEVER_DRAFT_TOKENS)
    wanted["speculation"] = [(gpu, "bf16", False, k) for k in ks]
    found = _exact_groups(space, results)
    missing = {g for groups in wanted.values() for g in groups} - set(found)
    starts = _warm_starts(results)
    searched = (efficiency, starts, progress, probes, sweep)
    found.update(_search_missing(usecase, space, missing, *searched))
    best = {name: _best_of(space, found, groups) for name, groups in wanted.items()}
    combo = _combination(best)
    if combo is not None and combo not in found:
        found.update(_search_missing(usecase, space, {combo}, *searched))
    rows = [_row(usecase, space, name, best[name]) for name in wanted]
    table = [g for groups in wanted.values() for g in groups]  # ties: the rows' order first
    everything = table + sorted(g for g in found if g[0] == gpu and g not in table)
    rows.append(_row(usecase, space, COMBINED, _best_of(space, found, everything)))
    return tuple(rows)


def _best_of(
    space: SearchSpace, found: dict[Group, ConfigResult], groups: list[Group]
) -> ConfigResult | None:
    """The best of the groups' bests (`_rank`), the first of `groups` on a tie."""
    mine = [found[g] for g in groups if g in found]
    return min(mine, key=lambda r: _rank(space, r), default=None)


def _combination(best: dict[str, ConfigResult | None]) -> Group | None:
    """Every lever that helped alone, together: the best precision, sparsity if it beat the
    baseline, and the best draft tokens if speculation did."""
    base = best[BASELINE]
    precisions = [r for name, r in best.items() if r is not None and name not in _NOT_PRECISION]
    if not precisions:
        return None
    top = min(precisions, key=lambda r: r.rate_per_gpu is None or -r.rate_per_gpu)
    sparse, spec = best["2:4 sparsity"], best["speculation"]

    def helped(r: ConfigResult | None) -> bool:
        return r is not None and (base is None or (r.rate_per_gpu or 0) > (base.rate_per_gpu or 0))

    k = group(spec.config)[3] if spec is not None and helped(spec) else 0
    return (top.config.gpu, top.config.precision, helped(sparse), k)


def _search_missing(
    usecase: UseCase,
    space: SearchSpace,
    groups: set[Group],
    efficiency: SpecEfficiency,
    starts: Callable[[DeploymentSpec], float | None],
    progress: Progress | None = None,
    probes: MakeProbe | None = None,
    sweep: Sweep | None = None,
) -> dict[Group, ConfigResult]:
    """The best of each group in `groups`, from one search without curves, each
    configuration's rate search warm-started where `starts` knows a fraction."""
    if not groups:
        return {}
    configs: tuple[DeploymentSpec, ...] = ()
    for gpu, precision, sparse, k in sorted(groups):
        one = usecase.candidates.model_copy(update={"gpus": [gpu]})
        configs += one.configs(
            usecase.model, precision=precision, sparsity=sparse, speculative_tokens=k
        )
    sub = dataclasses.replace(
        space,
        configs=configs,
        curves=False,
        settle_on_objective=True,
        per_group=True,
        stop_early=True,  # the table shows each group's best, never a failing point
    )
    warm = {c: f for c in configs if (f := starts(c)) is not None}
    found = _best_by_group(
        sub, search(sub, efficiency, progress, starts=warm, probes=probes, sweep=sweep)
    )
    return {g: r for g, r in found.items() if g in groups}


def _warm_starts(results: tuple[ConfigResult, ...]) -> Callable[[DeploymentSpec], float | None]:
    """Pruning: a lever changes a configuration's rate less than the grid's walk costs, so
    each lever configuration's rate search starts at the fraction of capacity where the
    same configuration without levers passed, and walks the grid from there (`RateSearch`):
    the answer is the bisection's, within its tolerance, with the walk down skipped."""
    fractions = {
        r.config: r.rate / r.capacity for r in results if r.rate is not None and r.capacity
    }

    def start(config: DeploymentSpec) -> float | None:
        plain = config.model_copy(
            update={"precision": "bf16", "sparsity": False, "speculative": None}
        )
        return fractions.get(plain)

    return start


def _exact_groups(
    space: SearchSpace, results: tuple[ConfigResult, ...]
) -> dict[Group, ConfigResult]:
    """The groups whose best the main search settled exactly: none of their configurations
    was dropped by the bound of another group. The main search bounds per GPU, and a bound
    only drops a configuration that cannot beat an incumbent, which is never better than
    the GPU's final best: so drops inside the group of the GPU's best leave that group
    exact (pruning: the baseline's group is not searched twice)."""
    winners = {r.config.gpu: group(r.config) for r in best_by_gpu(space, results).values()}
    bounded = {
        group(r.config)
        for r in results
        if r.status is Status.BOUNDED and group(r.config) != winners.get(r.config.gpu)
    }
    return {g: r for g, r in _best_by_group(space, results).items() if g not in bounded}


def _best_by_group(
    space: SearchSpace, results: tuple[ConfigResult, ...]
) -> dict[Group, ConfigResult]:
    """Per lever group, its feasible configuration of the lowest rank (`_rank`; the first in
    `results`, in `space.configs` order, on a tie); a group with no feasible configuration
    is absent."""
    best: dict[Group, ConfigResult] = {}
    for r in results:
        g = group(r.config)
        if r.rate is not None and (g not in best or _rank(space, r) < _rank(space, best[g])):
            best[g] = r
    return best


def _rank(space: SearchSpace, result: ConfigResult) -> tuple[int, int, int]:
    """`search.rank` without the position: the objective, then more GPUs per instance."""
    assert result.rate is not None
    return (*objective(space, result.config, result.rate), -result.config.gpus_per_instance)


def _row(usecase: UseCase, space: SearchSpace, lever: str, best: ConfigResult | None) -> LeverRow:
    if best is None or best.rate is None:
        return LeverRow(lever, None, None, True, "")
    c = best.config
    sizing = Sizing.of(space.load_rps, best.rate, c, server_for(c.gpu))
    k = group(c)[3]
    cands = usecase.candidates
    accepted = (
        c.precision in cands.precisions_for(c.gpu)
        and c.sparsity in cands.sparsity
        and k in cands.speculative_tokens
    )
    # speculation keeps the target's output distribution (`perf.levers`): no note of its own
    quality = quality_note(c.precision) + (f"; needs {SPARSITY_QUALITY}" if c.sparsity else "")
    return LeverRow(lever, best, sizing, accepted, quality)
