"""Use cases: the course's questions, words to tokens, the planning peak, and errors that name
the bad field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from llmsizer.sizing.inputs import usecase_dict, usecase_from_flags, usecase_from_mapping
from llmsizer.sizing.limits import Metric
from llmsizer.sizing.usecase import UseCase

TRACE = (
    Path(__file__).resolve().parents[2] / "examples" / "traces" / "AzureLLMInferenceTrace_conv.csv"
)
BASE: dict[str, Any] = {
    "model": "llama-3.1-8b",
    "input": {"user": 2000},
    "output": 200,
    "load": {"peak_rps": 70},
    "limits": {"ttft_ms": 500},
}


def usecase(**changes: Any) -> UseCase:
    return UseCase.model_validate({**BASE, **changes})


def error_of(**changes: Any) -> str:
    with pytest.raises(ValidationError) as e:
        usecase(**changes)
    return str(e.value)


def test_input_is_the_sum_of_its_parts_in_tokens() -> None:
    u = usecase(input={"system_prompt": 300, "documents": 1500, "history": 150, "user": 50})
    assert u.input_tokens == 2000
    assert u.output_tokens == 200


def test_words_become_tokens_at_the_course_ratio() -> None:
    u = usecase(unit="words", input={"user": 750}, output=75)  # 0.75 words per token
    assert (u.input_tokens, u.output_tokens) == (1000, 100)
    u = usecase(unit="words", words_per_token=1.0, input={"user": 750}, output=75)
    assert (u.input_tokens, u.output_tokens) == (750, 75)


def test_the_course_nemo_case_in_words_overflows_the_window_and_says_so() -> None:
    with pytest.raises(ValidationError) as e:
        usecase(model="nemo-gpt-43b", unit="words", input={"documents": 3500}, output=500)
    message = str(e.value)
    assert "5334 tokens" in message and "4096" in message
    assert "max_position_embeddings" in message and "words per token" in message


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"input": {"user": -5}}, "input.user", "greater than or equal to 0"),
        ({"output": -1}, "output", "greater than 0"),
        ({"candidates": {"gpus": ["h1000"]}}, "candidates.gpus", "unknown GPU 'h1000'"),
        ({"limits": {"ttft_ms": 500, "percentile": 101}}, "limits.percentile", "less than"),
        ({"limits": {"ttft_ms": 500, "percentile": 0}}, "limits.percentile", "greater than 0"),
        ({"limits": {"ttft_ms": 500, "ttft_percentile": -3}}, "limits.ttft_percentile", "0"),
        ({"load": {"average_rps": 5, "peak_percentile": 100}}, "load.peak_percentile", "100"),
        ({"model": "llama-99b"}, "model", "unknown model"),
        ({"load": {}}, "load", "exactly one of peak_rps"),
        ({"load": {"peak_rps": 3, "average_rps": 2}}, "load", "exactly one of peak_rps"),
        (
            {"candidates": {"tensor_parallel_sizes": [0, 2]}},
            "candidates.tensor_parallel_sizes",
            ">= 1",
        ),
        ({"candidates": {"precisions": ["fp7"]}}, "candidates.precisions", "unknown precision"),
        ({"headroom": -0.1}, "headroom", "greater than or equal to 0"),
        ({"typo": 1}, "typo", "Extra inputs are not permitted"),
    ],
)
def test_bad_use_cases_name_the_field(changes: dict[str, Any], field: str, words: str) -> None:
    message = error_of(**changes)
    assert field in message
    assert words in message


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"mode": "offline"}, "offline use is sized on throughput only"),
        ({"streaming": False}, "limits.e2el_ms: sequential use"),
        ({"prices": {"l40s": {"usd_per_gpu_hour": 1}}}, "prices: ['l40s'] are not among"),
        ({"prices": {"h100": {"usd_per_gpu_hour": 1, "server_usd": 9}}}, "exactly one of"),
        ({"input": {}}, "input: give at least one part"),
        ({"output": None}, "output: give the output length"),
        ({"lengths_trace": str(TRACE)}, "lengths_trace gives the lengths"),
        ({"lengths_trace": "/no/such/trace.csv", "input": {}, "output": None}, "does not exist"),
    ],
)
def test_inconsistent_use_cases_say_which_fields_clash(changes: dict[str, Any], words: str) -> None:
    assert words in error_of(**changes)


def test_sequential_use_with_an_e2e_limit_and_offline_without_limits_are_fine() -> None:
    assert not usecase(streaming=False, limits={"e2el_ms": 4000}).streaming
    assert usecase(mode="offline", limits={}).mode == "offline"


def test_planning_peak_from_each_kind_of_load() -> None:
    assert usecase(load={"peak_rps": 31}).load.planning_peak_rps() == 31
    assert usecase(load={"average_rps": 64}).load.planning_peak_rps() == 77  # the course
    dau = usecase(load={"daily_active_users": 679_000, "requests_per_user": 3, "working_hours": 8})
    assert dau.load.average == pytest.approx(70.7, rel=1e-3)  # the course, read backwards
    assert usecase(headroom=0.2, load={"peak_rps": 50}).planning_load_rps() == pytest.approx(60)


def test_limits_are_seconds_inside_with_per_metric_percentiles() -> None:
    limits = usecase(limits={"ttft_ms": 500, "tpot_ms": 50, "tpot_percentile": 99}).limits.build()
    assert limits.ttft_s == pytest.approx(0.5) and limits.tpot_s == pytest.approx(0.05)
    assert (limits.key(Metric.TTFT), limits.key(Metric.TPOT)) == ("p95_ttft_ms", "p99_tpot_ms")


def test_candidates_expand_to_configurations_with_catalog_names() -> None:
    u = usecase(
        candidates={
            "gpus": ["H100 SXM", "h200"],
            "precisions": ["FP8"],
            "tensor_parallel_sizes": [2, 1],
            "engines": ["vllm", "trtllm"],
        }
    )
    configs = u.candidates.configs(u.model)
    assert len(configs) == 2 * 1 * 2 * 2
    assert {c.gpu for c in configs} == {"h100-sxm", "h200-sxm"}
    assert {c.precision for c in configs} == {"fp8"}


@pytest.mark.parametrize(
    ("gpu", "default", "auto"),
    [
        ("h100-sxm", ["bf16", "fp8"], ["bf16", "fp8", "int4"]),  # Hopper: native fp8
        ("l40s", ["bf16", "fp8"], ["bf16", "fp8", "int4"]),  # Ada: native fp8
        ("b200", ["bf16", "fp8"], ["bf16", "fp8", "fp4", "int4"]),  # fp4 needs a check
        ("a100-sxm-80gb", ["bf16"], ["bf16", "int4"]),  # no fp8 tensor cores
    ],
)
def test_the_default_precisions_are_native_and_need_no_accuracy_check(
    gpu: str, default: list[str], auto: list[str]
) -> None:
    """Issue 11: `plan` tried bf16 alone unless told; the default is `lossless`, the GPU's
    formats with native math rated lossless or usually lossless (bf16, fp8); fp4 and int4
    stay opt-in (`auto` or by name) because they need an accuracy check."""
    u = usecase(candidates={"gpus": [gpu]})
    assert u.candidates.precisions == ["lossless"]
    assert u.candidates.precisions_for(u.candidates.gpus[0]) == default
    assert {c.precision for c in u.candidates.configs(u.model)} == set(default)
    wide = usecase(candidates={"gpus": [gpu], "precisions": ["auto"]})
    assert wide.candidates.precisions_for(wide.candidates.gpus[0]) == auto
    named = usecase(candidates={"gpus": [gpu], "precisions": ["Lossless", "int4"]})
    assert named.candidates.precisions_for(named.candidates.gpus[0]) == [*default, "int4"]


def test_flags_map_to_fields() -> None:
    u = usecase_from_flags(
        model="llama-3.1-8b",
        isl=2000,
        osl=200,
        peak_rps=70,
        ttft_ms=500,
        gpu="h100-sxm,h200,l40s",
        tp="1,2",
        headroom=0.1,
        seed=3,
    )
    assert u.input_tokens == 2000 and u.output_tokens == 200
    assert u.candidates.gpus == ["h100-sxm", "h200-sxm", "l40s"]
    assert u.candidates.tensor_parallel_sizes == [1, 2]
    assert (u.headroom, u.search.seed, u.limits.ttft_ms) == (0.1, 3, 500)
    assert usecase_dict(offline=True, sequential=True) == {"mode": "offline", "streaming": False}
    with pytest.raises(ValidationError, match=r"candidates\.tensor_parallel_sizes"):
        usecase_from_flags(model="llama-3.1-8b", isl=10, osl=10, peak_rps=1, tp="1,x")


def test_files_resolve_trace_paths_against_their_folder(tmp_path: Path) -> None:
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "t.csv").write_text(TRACE.read_text()[:2000].rsplit("\n", 1)[0] + "\n")
    data = {"model": "llama-3.1-8b", "lengths_trace": "traces/t.csv", "load": {"peak_rps": 2}}
    u = usecase_from_mapping(data, base_dir=tmp_path)
    assert u.lengths_trace == tmp_path / "traces" / "t.csv"
    with pytest.raises(ValidationError, match=r"load\.peak_rps"):
        usecase_from_mapping({**BASE, "load": {"peak_rps": -2}}, base_dir=tmp_path)
