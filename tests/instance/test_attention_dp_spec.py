"""The `attention_dp_size` field of a deployment: spellings, validation, GPU count."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from llmsizer.instance import DeploymentSpec, PredictSpec
from llmsizer.perf import Deployment


def test_dp_is_a_field_with_a_short_spelling_and_counts_gpus() -> None:
    spec = DeploymentSpec.model_validate(
        {"model": "deepseek-r1", "gpu": "b200", "tp": 2, "dp": 4, "ep": 8, "engine": "sglang"}
    )
    assert spec.attention_dp_size == 4
    assert spec.gpus_per_instance == 8
    assert "TP2 DP4 EP8" in spec.label()
    assert spec.row()["attention_dp_size"] == 4
    assert "dp" in DeploymentSpec.input_keys()


def test_vllm_enable_expert_parallel_spans_every_data_parallel_rank() -> None:
    """vLLM: EP size = TP x DP with --enable-expert-parallel."""
    spec = DeploymentSpec.model_validate(
        {"model": "deepseek-r1", "gpu": "b200", "tp": 2, "dp": 2, "enable_expert_parallel": True}
    )
    assert spec.expert_parallel_size == 4


def test_num_gpus_must_be_whole_instances_of_tp_pp_dp() -> None:
    with pytest.raises(ValidationError, match="not a multiple of tp x pp x dp = 8"):
        PredictSpec(
            model="deepseek-r1", gpu="b200", tp=1, dp=8, ep=8, isl=10, osl=10,
            concurrency=1, num_gpus=12,
        )  # fmt: skip


@pytest.mark.parametrize("dp", [0, -1])
def test_dp_below_one_is_refused(dp: int) -> None:
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        DeploymentSpec(model="deepseek-r1", gpu="b200", attention_dp_size=dp)


def test_a_dense_model_cannot_use_attention_dp() -> None:
    with pytest.raises(ValueError, match=r"attention_dp_size 2: llama-3\.1-8b has no experts"):
        Deployment.from_names("llama-3.1-8b", "h100", attention_dp_size=2)


def test_expert_parallel_divides_the_moe_world_of_tp_times_dp() -> None:
    d = Deployment.from_names(
        "deepseek-r1", "b200", "fp4", tensor_parallel_size=1, attention_dp_size=8,
        expert_parallel_size=8,
    )  # fmt: skip
    assert d.moe_world_size == 8 and d.num_gpus == 8
    with pytest.raises(ValueError, match="tensor_parallel_size x attention_dp_size = 4"):
        Deployment.from_names(
            "deepseek-r1", "b200", "fp4", tensor_parallel_size=2, attention_dp_size=2,
            expert_parallel_size=8,
        )  # fmt: skip
