"""BenchSpec: strict settings, comma lists, one sweep point per value."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from llmsizer.bench.spec import BenchSpec, LoadPoint
from llmsizer.workload import make_workload


def test_comma_lists_become_sweep_points() -> None:
    spec = BenchSpec(concurrency="1, 4,16")
    assert spec.load_points() == tuple(LoadPoint("concurrency", c) for c in (1, 4, 16))
    rates = BenchSpec(request_rate="2,4.5,inf")
    assert [p.label for p in rates.load_points()] == ["rate2", "rate4.5", "rateinf"]
    assert BenchSpec().load_points() == (LoadPoint("concurrency", 1),)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"concurrency": (1,), "request_rate": (2.0,)},
        {"concurrency": (0,)},
        {"request_rate": (-1.0,)},
        {"isl": 0},
        {"unknown_flag": 1},
        {"base_url": "localhost:8000"},
        {"base_url": "ftp://host"},
        {"base_url": "http://"},
        {"base_url": "http://127.0.0.1:8000/v1/"},
        {"timeout_s": math.inf},
        {"request_timeout_s": math.nan},
        {"request_rate": (math.nan,)},
    ],
)
def test_bad_settings_are_rejected(kwargs: dict) -> None:
    with pytest.raises(ValidationError):
        BenchSpec(**kwargs)


def test_frozen_and_every_field_documented() -> None:
    spec = BenchSpec()
    with pytest.raises(ValidationError):
        spec.isl = 3  # type: ignore[misc]
    for name, info in BenchSpec.model_fields.items():
        assert info.description and "\n" not in info.description, name


@pytest.mark.parametrize(
    ("point", "arrival"),
    [
        (LoadPoint("concurrency", 4), "closed_loop"),
        (LoadPoint("rate", 2.0), "poisson"),
        (LoadPoint("rate", math.inf), "burst"),
    ],
)
def test_workload_of_each_point(point: LoadPoint, arrival: str) -> None:
    spec = BenchSpec(isl=32, osl=8, num_prompts=5)
    workload = make_workload(spec.workload_spec(point))
    assert spec.workload_spec(point).arrival == arrival
    assert workload.num_requests == 5
    assert (workload.num_prompt_tokens == 32).all() and (workload.num_output_tokens == 8).all()
    assert (workload.arrival_s is None) == (arrival == "closed_loop")


def test_gamma_when_bursty() -> None:
    spec = BenchSpec(request_rate=(3.0,), burstiness=0.5)
    ws = spec.workload_spec(spec.load_points()[0])
    assert (ws.arrival, ws.request_rate, ws.burstiness) == ("gamma", 3.0, 0.5)
