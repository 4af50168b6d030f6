"""Ties broken by the configurations, not by the search's progress (`search.rank`): at an
equal objective the configuration with more GPUs per instance wins, then the first in
`space.configs`, in the branch and bound, `best_by_gpu` and the lever table alike. So the
lever table's search gives the same bests with its configurations in another order or
without pauses (`aside`). The case is the small lever table of `test_early_stop` (Llama 3
8B, TTFT 150 ms), whose 2:4 group ties at 4 GPUs: TP1 needs 4 instances, TP2 2."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from llmsizer.instance import DeploymentSpec
from llmsizer.sizing import levers
from llmsizer.sizing.aside import Aside
from llmsizer.sizing.plan import plan, search_space
from llmsizer.sizing.search import (
    ConfigResult,
    Status,
    best_by_gpu,
    evaluate,
    group,
    objective,
    rank,
    search,
)
from llmsizer.sizing.usecase import UseCase
from tests.sizing.test_early_stop import CASE

TIGHT = {**CASE, "limits": {"ttft_ms": 150}}


def _lever_search(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """The lever table's search of the case (its space, efficiency and warm starts)."""
    calls: list[tuple[Any, ...]] = []
    real = levers.search

    def kept(space: Any, efficiency: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append((space, efficiency, kwargs["starts"]))
        return real(space, efficiency, *args, **kwargs)

    monkeypatch.setattr(levers, "search", kept)
    plan(UseCase.model_validate(TIGHT))
    monkeypatch.setattr(levers, "search", real)
    return calls[0]


def _bests(space: Any, results: tuple[ConfigResult, ...]) -> dict[Any, tuple[Any, ...]]:
    """Per group, its best configuration and objective (`levers._best_by_group`)."""
    found = levers._best_by_group(space, results)
    return {g: (r.config, objective(space, r.config, r.rate or 0.0)) for g, r in found.items()}


def test_the_bests_do_not_depend_on_the_order_or_the_pauses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    space, efficiency, starts = _lever_search(monkeypatch)
    put, aside = [], Aside.put
    monkeypatch.setattr(Aside, "put", lambda self, entry: put.append(entry) or aside(self, entry))
    first = search(space, efficiency, starts=starts)
    assert len(put) >= 2  # probes were put aside (else the pauses change nothing)
    backwards = dataclasses.replace(space, configs=space.configs[::-1])
    reversed_ = search(backwards, efficiency, starts=starts)
    monkeypatch.setattr(Aside, "pause", lambda self, config, heap: None)
    unpaused = search(space, efficiency, starts=starts)
    # no two configurations of a group have the same GPUs per instance: the position never
    # decides, so the reversed order must give the same bests
    assert len({(group(c), c.gpus_per_instance) for c in space.configs}) == len(space.configs)
    assert _bests(space, first) == _bests(backwards, reversed_) == _bests(space, unpaused)
    assert len(_bests(space, first)) >= 3


def test_a_tie_shows_the_larger_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    """The 2:4 group: TP1 and TP2 searched alone need the same GPUs and servers; the lever
    search and the table's row show TP2, in either order of the configurations."""
    space, efficiency, starts = _lever_search(monkeypatch)
    sparse = tuple(c for c in space.configs if c.sparsity)
    alone = {c.tensor_parallel_size: evaluate(space, c, efficiency) for c in sparse}
    keys = {tp: objective(space, r.config, r.rate or 0.0) for tp, r in alone.items()}
    assert keys[1] == keys[2] and alone[1].rate is not None  # a tie (else nothing is tested)
    for configs in (sparse, sparse[::-1]):
        mine = dataclasses.replace(space, configs=configs)
        results = search(mine, efficiency, starts=starts)
        (best,) = levers._best_by_group(mine, results).values()
        assert best.config.tensor_parallel_size == 2
        assert objective(mine, best.config, best.rate or 0.0) == keys[2]
    row = {r.lever: r for r in plan(UseCase.model_validate(TIGHT)).levers}["2:4 sparsity"]
    assert row.best is not None and row.best.config.tensor_parallel_size == 2


def _result(config: DeploymentSpec, rate: float) -> ConfigResult:
    return ConfigResult(config, Status.OK, rate=rate)


def test_best_by_gpu_and_the_rows_break_a_tie_by_gpus_per_instance_then_position() -> None:
    space = search_space(UseCase.model_validate({**CASE, "load": {"peak_rps": 8}}))
    tp1, tp2 = space.configs  # TP1 at 2 req/s: 4 instances, 4 GPUs; TP2 at 4: 2 x 2 GPUs
    ones, twos = _result(tp1, 2.0), _result(tp2, 4.0)
    assert objective(space, tp1, 2.0) == objective(space, tp2, 4.0) == (1, 4)
    assert rank(space, tp2, 4.0, 1) < rank(space, tp1, 2.0, 0)
    for results in ((ones, twos), (twos, ones)):
        assert best_by_gpu(space, results)[tp1.gpu] is twos
        assert levers._best_by_group(space, results)[group(tp1)] is twos
    twin = _result(tp1.model_copy(update={"max_num_seqs": 64}), 2.0)  # same GPUs per instance
    assert best_by_gpu(space, (ones, twin))[tp1.gpu] is ones
    assert best_by_gpu(space, (twin, ones))[tp1.gpu] is twin
