"""The lever table's search again without pauses (`search.search`, `aside.Simulated`): it runs
on the first search's probes, so it simulates no (configuration, rate) whose verdict the
first search has, and its results are those of a search again on fresh probes, which
simulates them again. The case is the small lever table of `test_early_stop` (Llama 3 8B,
TTFT 150 ms), searched without a probe cache (as `search` is called directly): probes of
three or four groups are put aside, and (today three of) them searched again; the test
searches every group with a probe put aside again (`tied` always true), so that it holds
whatever the efficiency factors make of the ties."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from llmsizer.instance import DeploymentSpec
from llmsizer.sizing import levers
from llmsizer.sizing import search as search_module
from llmsizer.sizing.aside import Aside
from llmsizer.sizing.plan import plan
from llmsizer.sizing.probe import Probe
from llmsizer.sizing.search import ConfigResult, search
from llmsizer.sizing.usecase import UseCase
from tests.sizing.test_early_stop import CASE

Run = tuple[DeploymentSpec, float]  # a configuration's simulation at a rate


class Runs:
    """Every simulation `Probe._point` starts, in the first search and in the search again
    (the first search's `Aside.unsafe` call starts the second), and those that ended in a
    verdict (not put aside)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.phase = "first"
        self.started: dict[str, list[Run]] = {"first": [], "again": []}
        self.decided: dict[str, set[Run]] = {"first": set(), "again": set()}
        self.unsafe: set[Any] = set()

    def redone(self) -> list[Run]:
        """Simulations of the search again at a rate the first search has a verdict for."""
        return [run for run in self.started["again"] if run in self.decided["first"]]


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Runs]:
    counted = Runs()
    point, unsafe = Probe._point, Aside.unsafe

    def counted_point(self: Probe, rate: float, *args: Any) -> Any:
        run = (self.instance.spec, rate)
        counted.started[counted.phase].append(run)
        out = point(self, rate, *args)
        if out is not None:
            counted.decided[counted.phase].add(run)
        return out

    def marked(self: Aside, tied: Any) -> Any:
        groups = unsafe(self, tied)
        counted.unsafe |= groups
        counted.phase = "again"
        return groups

    monkeypatch.setattr(Probe, "_point", counted_point)
    monkeypatch.setattr(Aside, "unsafe", marked)
    yield counted


def _lever_search(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """The lever table's search of the case (its space, efficiency and warm starts)."""
    calls: list[tuple[Any, ...]] = []
    real = levers.search

    def kept(space: Any, efficiency: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append((space, efficiency, kwargs["starts"]))
        return real(space, efficiency, *args, **kwargs)

    monkeypatch.setattr(levers, "search", kept)
    plan(UseCase.model_validate({**CASE, "limits": {"ttft_ms": 150}}))
    monkeypatch.setattr(levers, "search", real)
    return calls[0]


def _search(space: Any, efficiency: Any, starts: Any, runs: Runs) -> tuple[ConfigResult, ...]:
    runs.reset()
    return search(space, efficiency, starts=starts)


def test_the_search_again_simulates_nothing_the_first_decided(
    monkeypatch: pytest.MonkeyPatch, runs: Runs
) -> None:
    space, efficiency, starts = _lever_search(monkeypatch)
    monkeypatch.setattr(search_module._BranchAndBound, "tied", lambda self, config: True)
    reused = _search(space, efficiency, starts, runs)
    assert len(runs.unsafe) >= 2 and runs.started["again"]  # groups searched again, simulating
    assert runs.redone() == []
    again_reused = list(runs.started["again"])
    monkeypatch.setattr(search_module, "Simulated", lambda probes, make: make)  # fresh probes
    fresh = _search(space, efficiency, starts, runs)
    assert len(runs.redone()) >= 2  # the verdicts the reuse takes, simulated again
    assert set(again_reused) < set(runs.started["again"])
    assert reused == fresh  # every configuration's verdict, rate and points
    assert [r.config for r in reused] == list(space.configs)
