"""The search split into parts (`search_parts`) and run on a process pool gives the serial
search's results exactly: the main search (a part per GPU, curves drawn), the lever table's
search (a part per lever group), the uncertainty band's variants and a whole plan; and what
the parts simulate comes back to the plan's probe cache (issue 13: `plan` runs on the CPUs
it may use by default)."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

import pytest

import llmsizer.sizing.probe as probe_module
from llmsizer.instance import DeploymentSpec
from llmsizer.perf import EfficiencyFactors, default_efficiency
from llmsizer.sizing.plan import plan, search_space
from llmsizer.sizing.plan_data import plan_data
from llmsizer.sizing.probe_cache import ProbeCache
from llmsizer.sizing.search import Status, group, search
from llmsizer.sizing.search_parts import part_of
from llmsizer.sizing.usecase import UseCase
from llmsizer.sweep import InProcess, Sweep, open_sweep
from tests.sizing.cases import two_gpus

FAST: dict[str, Any] = {
    "model": "llama-3-8b",
    "input": {"user": 2000},
    "output": 200,
    "load": {"peak_rps": 50},
    "limits": {"ttft_ms": 300},
    "candidates": {"gpus": ["h100-sxm", "a100-sxm-80gb", "l40s"], "tensor_parallel_sizes": [1, 2]},
    "search": {"num_requests": 300, "uncertainty": 0.0, "levers": False},
}


def by_spec(spec: DeploymentSpec) -> EfficiencyFactors:
    return default_efficiency(spec.preset)


@pytest.fixture(scope="module")
def pool() -> Iterator[Sweep]:
    with open_sweep(2) as sweep:
        yield sweep


def test_parts_are_gpus_or_lever_groups() -> None:
    space = search_space(UseCase.model_validate(FAST))
    assert {part_of(space, c) for c in space.configs} == {"h100-sxm", "a100-sxm-80gb", "l40s"}
    levers = space.__class__(**{**_fields(space), "per_group": True, "curves": False})
    assert {part_of(levers, c) for c in levers.configs} == {group(c) for c in space.configs}


def _fields(space: Any) -> dict[str, Any]:
    return {name: getattr(space, name) for name in space.__slots__}


def test_the_main_search_on_a_pool_equals_the_serial_search(pool: Sweep) -> None:
    space = search_space(UseCase.model_validate(FAST))
    serial = search(space, by_spec)
    assert any(r.curve for r in serial)  # the winners' curves are part of what is compared
    assert any(r.status is Status.BOUNDED for r in serial)  # and the bound's pruning
    seen: list[tuple[int, int]] = []
    assert search(space, by_spec, progress=lambda d, t: seen.append((d, t)), sweep=pool) == serial
    assert seen[-1] == (len(space.configs), len(space.configs))
    assert search(space, by_spec, sweep=InProcess()) == serial  # one worker: in process


def test_a_plan_with_levers_on_a_pool_equals_the_serial_plan(pool: Sweep) -> None:
    usecase = UseCase.model_validate(two_gpus(uncertainty=0.0, curves=True))
    serial = plan(usecase, efficiency=default_efficiency)
    assert len(serial.levers) >= 4  # the lever table ran its own per-group search
    # a row read from the main search holds its curve, drawn on the pool after the table
    assert any(row.best is not None and row.best.curve for row in serial.levers)
    assert plan(usecase, efficiency=default_efficiency, sweep=pool) == serial


def _no_simulation(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("simulated again")


def test_a_probe_cache_travels_with_what_it_simulated(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache sent to another process (pickled) carries every capacity and point simulated,
    so a plan there re-simulates nothing (and equals the plan here)."""
    usecase = UseCase.model_validate({**FAST, "search": {**FAST["search"], "curves": False}})
    cache = ProbeCache()
    here = plan(usecase, efficiency=default_efficiency, probes=cache, quick=True)
    copy = pickle.loads(pickle.dumps(cache))
    assert len(copy.states()) == len(cache) > 0
    monkeypatch.setattr(probe_module, "run_instance", _no_simulation)
    monkeypatch.setattr(probe_module, "WatchedRun", _no_simulation)
    assert plan(usecase, efficiency=default_efficiency, probes=copy, quick=True) == here


def test_a_plan_on_a_pool_keeps_what_its_parts_simulated(
    pool: Sweep, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parts' simulations come back to the plan's cache: the same search asked again in
    this process simulates nothing."""
    cache = ProbeCache()
    on_pool = plan(
        UseCase.model_validate(FAST),
        efficiency=default_efficiency,
        probes=cache,
        sweep=pool,
        quick=True,
    )
    monkeypatch.setattr(probe_module, "run_instance", _no_simulation)
    monkeypatch.setattr(probe_module, "WatchedRun", _no_simulation)
    again = plan(
        UseCase.model_validate(FAST), efficiency=default_efficiency, probes=cache, quick=True
    )
    assert again == on_pool


def test_a_plan_with_its_band_on_a_pool_equals_the_serial_plan(pool: Sweep) -> None:
    usecase = UseCase.model_validate(
        {
            **FAST,
            "candidates": {"gpus": ["h100-sxm", "l40s"], "tensor_parallel_sizes": [1]},
            "search": {**FAST["search"], "uncertainty": 0.2, "curves": False},
        }
    )
    serial = plan(usecase, efficiency=default_efficiency)
    assert serial.band is not None and len(serial.band.variants) == 3  # efficiency -, +; spread
    on_pool = plan(usecase, efficiency=default_efficiency, sweep=pool)
    assert on_pool == serial
    assert plan_data(on_pool) == plan_data(serial)
