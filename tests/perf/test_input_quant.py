"""An NVFP4 dense linear layer's input quantisation: a kernel of its own in vLLM, one per GEMM
input in the step's fixed time; none for a MoE model's experts-only checkpoint, none for FP8
(`perf.launches.input_quant_launches`, docs/aic_measurement.md section 40). An FP8
checkpoint's in SGLang: one per FP8 GEMM input, the routed experts' included
(`fp8_input_quant_launches`, section 53)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from llmsizer.instance import PredictSpec, make_instance
from llmsizer.perf.batch_shape import decode_batch
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.efficiency import EfficiencyFactors
from llmsizer.perf.launches import (
    DENSE_LAYER,
    ENGINE_INPUT_QUANT,
    eager_launches,
    fp8_input_quant_launches,
    input_quant_launches,
    layer_units,
)
from llmsizer.perf.step import StepModel
from llmsizer.specs import get_model
from llmsizer.specs.dtypes import Precision
from llmsizer.units import US

PER_KERNEL_S = 4 * US
EFF = EfficiencyFactors(layer_overhead_s=DENSE_LAYER * PER_KERNEL_S)


def _deployment(model: str, precision: str, quant: bool) -> Deployment:
    d = Deployment.from_names(model, "b200-sxm", precision, tensor_parallel_size=4)
    return replace(d, separate_input_quant=ENGINE_INPUT_QUANT["vllm"] if quant else frozenset())


def test_a_dense_layer_quantises_its_four_gemm_inputs() -> None:
    # Llama-3.1-70B: qkv, output, gate-up and down a layer, 80 layers: 16 kernels, not 12
    llama = get_model("llama-3.1-70b")
    assert input_quant_launches(llama) == 80 * 4
    assert eager_launches(llama, input_quant=Precision.FP4) == 80 * 16
    assert layer_units(llama, input_quant=Precision.FP4) == pytest.approx(80 * 16 / 12)
    assert layer_units(llama) == 80  # without it, as before


@pytest.mark.parametrize("name", ["minimax-m2.5", "deepseek-v3", "kimi-k2.5"])
def test_a_moe_checkpoint_quantises_its_experts_inside_their_kernel(name: str) -> None:
    model = get_model(name)
    assert input_quant_launches(model) == 0
    assert layer_units(model, input_quant=Precision.FP4) == layer_units(model)


def test_an_nvfp4_decode_step_pays_each_quantisation_kernel() -> None:
    batch = decode_batch(8, 2_000)
    plain = StepModel(_deployment("llama-3.1-70b", "fp4", False), EFF)(batch)
    quant = StepModel(_deployment("llama-3.1-70b", "fp4", True), EFF)(batch)
    assert quant - plain == pytest.approx(80 * 4 * PER_KERNEL_S, rel=1e-9)  # 1.28 ms
    # FP8 is given no count (its fixed part is priced right: docs section 40)
    fp8 = [StepModel(_deployment("llama-3.1-70b", "fp8", q), EFF)(batch) for q in (False, True)]
    assert fp8[0] == fp8[1]


def _spec(
    engine: str, precision: str, model: str = "llama-3.1-70b", gpu: str = "b200-sxm"
) -> PredictSpec:
    return PredictSpec.model_validate(
        {"model": model, "gpu": gpu, "precision": precision, "isl": 100, "osl": 10,
         "concurrency": 4, "tensor_parallel_size": 4, "engine": {"engine": engine}}
    )  # fmt: skip


def test_vllm_runs_the_quantisation_separately_and_other_engines_are_not_read() -> None:
    vllm = make_instance(_spec("vllm", "fp4")).deployment
    assert vllm.separate_input_quant == {Precision.FP4} and vllm.input_quant
    assert not make_instance(_spec("vllm", "fp8")).deployment.input_quant
    for engine in ("sglang", "trtllm"):
        assert (
            Precision.FP4 not in make_instance(_spec(engine, "fp4")).deployment.separate_input_quant
        )


def test_an_fp8_checkpoint_quantises_every_fp8_gemm_input_in_sglang() -> None:
    # SGLang `fp8_utils.py`: each block-FP8 GEMM calls `sglang_per_token_group_quant_fp8`
    # first; Qwen3.5's Gated DeltaNet keeps `in_proj_ba` BF16 (perf.launches docstring)
    qwen = get_model("qwen3.5-397b-a17b")  # 15 softmax + 45 Gated DeltaNet layers, all MoE
    per_layer = {"attention": 2, "shared experts": 2, "routed experts' input": 1}
    assert sum(per_layer.values()) == 5
    assert fp8_input_quant_launches(qwen) == 60 * 5
    # DeepSeek-V3: 61 MLA layers (4 FP8 GEMMs), 58 MoE (shared 2 + routed 1), 3 dense MLPs (2)
    assert fp8_input_quant_launches(get_model("deepseek-v3")) == 61 * 4 + 58 * 3 + 3 * 2
    assert eager_launches(qwen, input_quant=Precision.FP8) == eager_launches(qwen) + 300
    # a BF16 checkpoint launches none, an NVFP4 MoE one none (experts only)
    assert layer_units(qwen, input_quant=None) == layer_units(qwen, input_quant=Precision.FP4)


def _qwen(engine: str, precision: str) -> PredictSpec:
    return _spec(engine, precision, "qwen3.5-397b-a17b", "b300")


def test_sglang_alone_counts_the_fp8_quantisations_and_only_for_fp8() -> None:
    assert make_instance(_qwen("sglang", "fp8")).deployment.input_quant is Precision.FP8
    for engine, precision in (("sglang", "bf16"), ("sglang", "fp4"), ("vllm", "fp8")):
        assert make_instance(_qwen(engine, precision)).deployment.input_quant is None


def test_an_sglang_fp8_decode_step_pays_each_quantisation_kernel() -> None:
    batch = decode_batch(4, 2_000)
    d = Deployment.from_names("qwen3.5-397b-a17b", "b300", "fp8", tensor_parallel_size=4)
    plain = StepModel(d, EFF)(batch)
    quant = StepModel(replace(d, separate_input_quant=frozenset({d.precision})), EFF)(batch)
    assert quant - plain == pytest.approx(300 * PER_KERNEL_S, rel=1e-9)  # 1.2 ms
