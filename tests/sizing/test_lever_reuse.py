"""Pruning in the lever table (issue 11): the main search's best is reused for its own group
when every configuration the bound dropped on that GPU was of the same group, and what it
reuses is what a search of that group alone finds; groups searched again, and the
timeline, reuse the plan's probes."""

from __future__ import annotations

from typing import Any

import pytest

from llmsizer.instance import calibrated_for
from llmsizer.sizing import levers
from llmsizer.sizing.levers import BASELINE
from llmsizer.sizing.plan import plan, search_space
from llmsizer.sizing.plan_data import plan_data
from llmsizer.sizing.probe_cache import ProbeCache
from llmsizer.sizing.search import Group, Status, group, make_probe, search
from llmsizer.sizing.usecase import UseCase

CASE: dict[str, Any] = {
    "model": "llama-3-8b",
    "input": {"user": 2000},
    "output": 200,
    "load": {"peak_rps": 40},
    "limits": {"ttft_ms": 400},
    # bf16 only: the winner's group is then the baseline's (the default, `lossless`, also
    # searches fp8, which wins and bounds bf16 out: the second test's case)
    "candidates": {
        "gpus": ["h100-sxm"],
        "precisions": ["bf16"],
        "tensor_parallel_sizes": [1, 2, 4],
    },
    "search": {"num_requests": 400, "curves": False, "uncertainty": 0.0},
}
BF16: Group = ("h100-sxm", "bf16", False, 0)


def test_the_baseline_group_is_not_searched_again(monkeypatch: pytest.MonkeyPatch) -> None:
    u = UseCase.model_validate(CASE)
    space = search_space(u)
    main = search(space, calibrated_for)
    assert any(r.status is Status.BOUNDED and group(r.config) == BF16 for r in main)

    searched: list[set[Group]] = []
    search_missing = levers._search_missing

    def spy(usecase: UseCase, space: Any, groups: set[Group], *args: Any) -> Any:
        searched.append(set(groups))
        return search_missing(usecase, space, groups, *args)

    monkeypatch.setattr(levers, "_search_missing", spy)
    result = plan(u)
    assert searched and all(BF16 not in groups for groups in searched)
    base = next(r for r in result.levers if r.lever == BASELINE)
    w = result.winner
    assert w is not None and w.best is not None and base.best is not None
    assert base.best.config == w.best.config and base.sizing == w.sizing

    # what a search of the group alone, as the table did before, finds: the same count
    alone = search_missing(u, space, {BF16}, calibrated_for, lambda c: None)[BF16]
    assert alone.rate is not None and levers._rank(space, alone) == levers._rank(space, base.best)


def test_a_plan_reuses_its_own_probes_and_gives_the_same_answer() -> None:
    """A plan keeps its probes (a `ProbeCache` of its own): the timeline and a lever group
    searched again (fp8 here, bounded by bf16 in the main search) reuse the search's
    simulations, and the plan equals one that builds every probe afresh."""
    u = UseCase.model_validate(
        {**CASE, "candidates": {**CASE["candidates"], "precisions": ["bf16", "fp8"]}}
    )
    asked: list[Any] = []

    def fresh(space: Any, config: Any, efficiency: Any) -> Any:
        asked.append(config)
        return make_probe(space, config, efficiency)

    uncached = plan_data(plan(u, probes=fresh))
    cache = ProbeCache()
    assert plan_data(plan(u, probes=cache)) == uncached == plan_data(plan(u))
    assert cache.hits > 0 and cache.misses < len(asked)
