"""Gated DeltaNet input projections as SGLang ran them by version (`perf.launches`,
docs/aic_measurement.md section 66): up to 0.5.9 Qwen3.5's four GEMMs, `in_proj_qkv`,
`in_proj_z`, `in_proj_b`, `in_proj_a`, where 0.5.10 runs `in_proj_qkvz`, `in_proj_ba` and one
split kernel; on an FP8 checkpoint `in_proj_z` quantises its input once more."""

from __future__ import annotations

from dataclasses import replace

import pytest

from llmsizer.instance import PredictSpec, make_instance
from llmsizer.perf.batch_shape import BatchShape, ChunkShape, decode_batch
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.efficiency import EfficiencyFactors
from llmsizer.perf.launches import (
    DENSE_LAYER,
    LINEAR_ATTENTION,
    eager_launches,
    gdn_projection_launches,
    layer_units,
)
from llmsizer.perf.step import StepModel
from llmsizer.specs import get_model
from llmsizer.specs.dtypes import Precision
from llmsizer.units import US

PER_KERNEL_S = 4 * US
EFF = EfficiencyFactors(
    layer_overhead_s=DENSE_LAYER * PER_KERNEL_S, prefill_layer_overhead_s=DENSE_LAYER * 10 * US
)
QWEN = get_model("qwen3.5-397b-a17b")  # 15 softmax + 45 Gated DeltaNet layers


def test_the_four_gemms_launch_one_kernel_more_a_layer_than_the_merged_two_and_split() -> None:
    # 0.5.9 `_forward`: in_proj_qkv, in_proj_z, in_proj_b, in_proj_a (the `.contiguous()` of a
    # GEMM's output copies nothing); 0.5.10: in_proj_qkvz, in_proj_ba and the fused split
    separate, merged = 4, 2 + 1
    assert QWEN.num_linear_attention_layers == 45
    for quant in (None, Precision.FP4):  # BF16, and NVFP4's unquantised linear attention
        assert gdn_projection_launches(QWEN, True, quant) == 45 * (separate - merged)
        plain = eager_launches(QWEN, input_quant=quant)
        assert eager_launches(QWEN, input_quant=quant, separate_gdn_projections=True) == plain + 45
    assert LINEAR_ATTENTION - merged + separate == 18


def test_an_fp8_checkpoint_quantises_z_s_input_as_well() -> None:
    # qkv and z FP8, each quantising the same input; b and a BF16 (modules_to_not_convert)
    separate_quant, merged_quant = 2, 1
    extra = 45 * (1 + separate_quant - merged_quant)
    for fp8 in (Precision.FP8, Precision.FP8_BLOCK):
        assert gdn_projection_launches(QWEN, True, fp8) == extra == 90
        units = layer_units(QWEN, input_quant=fp8, separate_gdn_projections=True)
        assert units == pytest.approx(layer_units(QWEN, input_quant=fp8) + 90 / DENSE_LAYER)


@pytest.mark.parametrize("model", ["deepseek-v3", "llama-3.1-70b", "qwen3-235b-a22b"])
def test_a_model_without_gated_deltanet_counts_the_same_either_way(model: str) -> None:
    m = get_model(model)
    assert gdn_projection_launches(m, True, Precision.FP8) == 0
    assert layer_units(m, separate_gdn_projections=True) == layer_units(m)


def test_the_merged_layout_is_today_s_count() -> None:
    assert gdn_projection_launches(QWEN, False, Precision.FP8) == 0
    assert eager_launches(QWEN, separate_gdn_projections=False) == eager_launches(QWEN)


def _steps(precision: str, quant: bool) -> tuple[StepModel, StepModel]:
    d = Deployment.from_names("qwen3.5-397b-a17b", "b200-sxm", precision, tensor_parallel_size=8)
    if quant:
        d = replace(d, separate_input_quant=frozenset({d.precision}))
    return StepModel(d, EFF), StepModel(replace(d, separate_gdn_projections=True), EFF)


@pytest.mark.parametrize(
    ("precision", "quant", "kernels"), [("bf16", False, 45), ("fp8", True, 90)]
)
def test_a_decode_step_pays_each_kernel_and_a_prompt_step_each_launch(
    precision: str, quant: bool, kernels: int
) -> None:
    merged, separate = _steps(precision, quant)
    decode = decode_batch(4, 2_000)
    assert separate(decode) - merged(decode) == pytest.approx(kernels * PER_KERNEL_S, rel=1e-9)
    prompt = BatchShape(prefill_chunks=(ChunkShape(1024),))
    eager = kernels * (PER_KERNEL_S + 10 * US)  # each kernel's fixed time and its launch
    assert separate(prompt) - merged(prompt) == pytest.approx(eager, rel=1e-9)


def _spec(**changes: object) -> PredictSpec:
    return PredictSpec.model_validate(
        {"model": "qwen3.5-397b-a17b", "gpu": "b200-sxm", "precision": "bf16", "isl": 100,
         "osl": 10, "concurrency": 4, "tensor_parallel_size": 8, "engine": {"engine": "sglang"},
         **changes}
    )  # fmt: skip


def test_a_deployment_runs_the_merged_projections_unless_its_spec_says_otherwise() -> None:
    assert not make_instance(_spec()).deployment.separate_gdn_projections
    assert make_instance(_spec(separate_gdn_projections=True)).deployment.separate_gdn_projections
    with pytest.raises(ValueError, match="separate_gdn_projections"):
        _spec(separate_gdn_projections="four")
