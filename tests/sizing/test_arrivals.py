"""Arrivals in the use case: burstier traffic never needs fewer GPUs; a trace's gaps are
scaled to the probe's rate; bad settings name the field."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pydantic
import pytest

from llmsizer.sizing.arrivals import ArrivalPattern
from llmsizer.sizing.plan import plan
from llmsizer.sizing.usecase import UseCase

TRACE = Path(__file__).resolve().parents[2] / "examples" / "traces"
FAST: dict[str, Any] = {
    "model": "llama-3-8b",
    "input": {"user": 2000},
    "output": 200,
    "load": {"peak_rps": 40},
    "limits": {"ttft_ms": 400},
    "candidates": {"gpus": ["h100-sxm"], "tensor_parallel_sizes": [1, 2]},
    "search": {"num_requests": 600, "curves": False, "uncertainty": 0.0, "levers": False},
}


def gpus(load: dict[str, Any]) -> int:
    u = UseCase.model_validate({**FAST, "load": {"peak_rps": 40, **load}})
    w = plan(u).winner
    assert w is not None and w.sizing is not None
    return w.sizing.num_gpus


def test_burstier_arrivals_never_need_fewer_gpus() -> None:
    answers = [gpus({"arrival": "gamma", "burstiness": b}) for b in (4.0, 1.0, 0.5, 0.2)]
    assert answers[1] == gpus({})  # burstiness 1 is a Poisson process: same count
    for fewer_bursts, more_bursts in itertools.pairwise(answers):
        assert more_bursts >= fewer_bursts, answers
    assert answers[-1] > answers[0], answers  # and the difference is real


def test_gamma_pattern_has_the_requested_spread() -> None:
    rng = np.random.default_rng(0)
    times = ArrivalPattern.of("gamma", 0.25, None).unit_arrivals(40_000, rng)
    gaps = np.diff(times)
    assert gaps.mean() == pytest.approx(1.0, rel=0.03)  # unit rate
    assert gaps.std() / gaps.mean() == pytest.approx(2.0, rel=0.05)  # CV = 1 / sqrt(b)


def test_a_trace_pattern_runs_at_unit_rate_and_keeps_its_order() -> None:
    path = next(TRACE.glob("*.csv"))
    pattern = ArrivalPattern.of("trace", 1.0, path)
    times = pattern.unit_arrivals(pattern.trace_gaps.size + 1, np.random.default_rng(0))
    assert np.diff(times).mean() == pytest.approx(1.0)
    longer = pattern.unit_arrivals(3 * pattern.trace_gaps.size, np.random.default_rng(0))
    assert np.all(np.diff(longer) >= 0) and path.name in pattern.source


@pytest.mark.parametrize(
    ("load", "message"),
    [
        ({"arrival": "trace"}, "arrival_trace"),
        ({"burstiness": 0.5}, "burstiness applies to gamma"),
        ({"arrival": "gamma", "burstiness": 0}, "burstiness"),
    ],
)
def test_bad_arrival_settings_name_the_field(load: dict[str, Any], message: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=message):
        UseCase.model_validate({**FAST, "load": {"peak_rps": 40, **load}})
