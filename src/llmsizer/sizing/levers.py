"""What each lever buys: GPUs needed with the baseline, with each lever alone, and combined.

On one GPU type (the winner's, else the first candidate's), over the use case's other axes
(TP, PP, engine, batch knobs):

    baseline          bf16, dense weights
    <precision>       each other precision the GPU runs well (`perf.levers.search_precisions`)
                      or the use case accepts
    2:4 sparsity      bf16, sparse weights
    best combination  the best group found, the best precision with sparsity included

A lever group the main search already settled (`search.group`) is read from its results;
the others are searched together in one more branch and bound, which keeps the best of each
group exact (`search`). Rows the use case does not accept (a precision outside
`candidates.precisions`, sparsity it did not list) are still shown, marked, so the planner
sees what a wider acceptance would buy; the plan's answer uses accepted rows only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from llmsizer.instance import DeploymentSpec
from llmsizer.perf import EfficiencyFactors
from llmsizer.perf.levers import SPARSITY_QUALITY, quality_note, search_precisions
from llmsizer.sizing.configuration import Sizing
from llmsizer.sizing.search import ConfigResult, Group, SearchSpace, group, objective, search
from llmsizer.sizing.servers import server_for
from llmsizer.sizing.usecase import UseCase
from llmsizer.specs import get_gpu

BASELINE = "baseline (bf16)"
COMBINED = "best combination"


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
    efficiency: Callable[[str], EfficiencyFactors],
) -> tuple[LeverRow, ...]:
    """The rows of the module docstring for `gpu`."""
    wanted: dict[str, Group] = {BASELINE: (gpu, "bf16", False)}
    own = [p.value for p in search_precisions(get_gpu(gpu))]
    for p in dict.fromkeys(own + usecase.candidates.precisions_for(gpu)):
        if p != "bf16":
            wanted[p] = (gpu, p, False)
    wanted["2:4 sparsity"] = (gpu, "bf16", True)
    found = _best_by_group(space, results)
    found.update(_search_missing(usecase, space, set(wanted.values()) - set(found), efficiency))
    precision = min(
        (g for g in found if g[0] == gpu and not g[2]),
        key=lambda g: _rank(space, found[g]),
        default=None,
    )
    if precision is not None and (gpu, precision[1], True) not in found:
        combo = (gpu, precision[1], True)
        found.update(_search_missing(usecase, space, {combo}, efficiency))
    rows = [_row(usecase, space, name, found.get(g)) for name, g in wanted.items()]
    mine = [g for g in found if g[0] == gpu]
    best = min(mine, key=lambda g: _rank(space, found[g]), default=None)
    rows.append(_row(usecase, space, COMBINED, None if best is None else found[best]))
    return tuple(rows)


def _search_missing(
    usecase: UseCase,
    space: SearchSpace,
    groups: set[Group],
    efficiency: Callable[[str], EfficiencyFactors],
) -> dict[Group, ConfigResult]:
    """The best of each group in `groups`, from one search without curves."""
    if not groups:
        return {}
    configs: tuple[DeploymentSpec, ...] = ()
    for gpu, precision, sparse in sorted(groups):
        one = usecase.candidates.model_copy(update={"gpus": [gpu]})
        configs += one.configs(usecase.model, precision=precision, sparsity=sparse)
    sub = dataclasses.replace(space, configs=configs, curves=False)
    found = _best_by_group(sub, search(sub, efficiency))
    return {g: r for g, r in found.items() if g in groups}


def _best_by_group(
    space: SearchSpace, results: tuple[ConfigResult, ...]
) -> dict[Group, ConfigResult]:
    """Per lever group, its feasible configuration with the lowest objective (first on ties);
    a group with no feasible configuration is absent."""
    best: dict[Group, ConfigResult] = {}
    for r in results:
        g = group(r.config)
        if r.rate is not None and (g not in best or _rank(space, r) < _rank(space, best[g])):
            best[g] = r
    return best


def _rank(space: SearchSpace, result: ConfigResult) -> tuple[int, int]:
    assert result.rate is not None
    return objective(space, result.config, result.rate)


def _row(usecase: UseCase, space: SearchSpace, lever: str, best: ConfigResult | None) -> LeverRow:
    if best is None or best.rate is None:
        return LeverRow(lever, None, None, True, "")
    c = best.config
    sizing = Sizing.of(space.load_rps, best.rate, c, server_for(c.gpu))
    accepted = c.precision in usecase.candidates.precisions_for(c.gpu) and (
        c.sparsity in usecase.candidates.sparsity
    )
    quality = quality_note(c.precision) + (f"; needs {SPARSITY_QUALITY}" if c.sparsity else "")
    return LeverRow(lever, best, sizing, accepted, quality)
