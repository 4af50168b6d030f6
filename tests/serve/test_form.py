"""The form is the use case: every course example survives YAML -> fields -> use case, and a
bad value's message lands beside the field it belongs to."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmsizer.config import load_usecase, read_yaml
from llmsizer.serve.form import (
    FIELDS,
    GENERAL,
    form_from_usecase,
    unused_keys,
    usecase_dict,
    usecase_from_form,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sizing"
COURSE = ["llama3_8b_h100.yaml", "nemo43b_dgx_h100.yaml"]
NEMO = {
    "model": "nemo-gpt-43b",
    "documents": "3500",
    "output": "500",
    "peak_rps": "31",
    "ttft_ms": "3000",
    "gpus": "dgx-h100",
    "precisions": "bf16",
    "engines": "trtllm",
    "tp": "1,2,4,8",
}


@pytest.mark.parametrize("name", COURSE)
def test_course_examples_round_trip_through_the_form(name: str) -> None:
    path = EXAMPLES / name
    form = form_from_usecase(read_yaml(path))
    usecase, errors = usecase_from_form(form)
    assert errors == {}
    assert usecase == load_usecase(path)
    assert unused_keys(read_yaml(path)) == []


def test_fields_become_the_nested_use_case() -> None:
    data = usecase_dict({**NEMO, "usd_per_gpu_hour": "h100-sxm=3, h200 = 4", "name": " "})
    assert data["input"] == {"documents": "3500"}
    assert data["load"] == {"peak_rps": "31"}
    assert data["candidates"]["tensor_parallel_sizes"] == ["1", "2", "4", "8"]
    assert data["prices"] == {
        "h100-sxm": {"usd_per_gpu_hour": "3"},
        "h200": {"usd_per_gpu_hour": "4"},
    }
    assert "name" not in data  # blank: unset, the schema's default applies


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"peak_rps": "-3"}, "peak_rps", "greater than 0"),
        ({"model": "llama-9-400b"}, "model", "llama-9-400b"),
        ({"average_rps": "20"}, "peak_rps", "exactly one of peak_rps"),
        ({"output": "4000"}, "output", "context window"),
        ({"tp": "1,x"}, "tp", "integer"),
        ({"gpus": "h100-sxm", "usd_per_gpu_hour": "h200=4"}, "usd_per_gpu_hour", "not among"),
        ({"usd_per_gpu_hour": "dgx-h100=abc"}, "usd_per_gpu_hour", "number"),
        ({"documents": ""}, "user", "at least one part"),
        ({"streaming": "false"}, "e2el_ms", "end-to-end"),
    ],
)
def test_a_bad_value_is_named_beside_its_field(
    change: dict[str, str], field: str, words: str
) -> None:
    usecase, errors = usecase_from_form({**NEMO, **change})
    assert usecase is None
    assert field in FIELDS or field == GENERAL
    assert words in errors[field], errors


def test_fields_that_are_not_a_use_case_are_ignored() -> None:
    usecase, errors = usecase_from_form({**NEMO, "q": "x", "note": "hello"})
    assert errors == {} and usecase is not None
    assert usecase.model == "nemo-gpt-43b"


def test_unused_keys_are_listed() -> None:
    assert unused_keys({"model": "m", "search": {"seed": 3}, "load": {"window_s": 2}}) == [
        "search",
        "load.window_s",
    ]
