"""Eager prompt steps: launches per kind of layer times a cost per launch; every step: each
kernel's fixed time, `layer_overhead_s` per dense layer's kernels (`perf.launches`)."""

from __future__ import annotations

import pytest

from llmsizer.perf.batch_shape import BatchShape, ChunkShape, aggregate, decode_batch
from llmsizer.perf.cuda_graphs import ENGINE_SHARED_EXPERTS, CudaGraphs, capture_plan
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.efficiency import EfficiencyFactors, EnginePreset
from llmsizer.perf.launches import (
    DENSE_LAYER,
    INDEXER,
    eager_launches,
    eager_layer_units,
    layer_units,
)
from llmsizer.perf.step import StepModel, StepTerms, step_terms
from llmsizer.specs import get_model
from llmsizer.units import GB, US

PER_LAUNCH_S = 10 * US  # within PyTorch's ~5-25 us a dispatched op
EFF = EfficiencyFactors(prefill_layer_overhead_s=DENSE_LAYER * PER_LAUNCH_S)
PROMPT = BatchShape(prefill_chunks=(ChunkShape(1024),))


def _plan(engine: str) -> CudaGraphs:
    return capture_plan(
        engine, max_num_seqs=256, max_num_batched_tokens=8192, gpu_memory_bytes=180 * GB,
        tensor_parallel_size=8,
    )  # fmt: skip


def _step(model: str, graphs: CudaGraphs | None, eff: EfficiencyFactors = EFF) -> StepModel:
    return StepModel(Deployment.from_names(model, "b200-sxm", "fp8", tensor_parallel_size=8), eff,
                     graphs)  # fmt: skip


def _terms(step: StepModel, batch: BatchShape) -> StepTerms:
    c = step.constants
    return StepTerms._make(step_terms(c, aggregate(batch, c.window), step.cuda_graphs))


def test_a_dense_layer_launches_fewer_kernels_than_moe_and_mla_layers() -> None:
    per_layer = {
        name: eager_launches(get_model(name)) / get_model(name).num_layers
        for name in ("llama-3.1-70b", "qwen3-235b-a22b", "deepseek-v3", "glm-5")
    }
    assert per_layer["llama-3.1-70b"] == DENSE_LAYER == 12
    # MoE with GQA < MoE with MLA and shared experts < the same with a sparse-attention indexer
    assert (
        per_layer["llama-3.1-70b"]
        < per_layer["qwen3-235b-a22b"]
        < per_layer["deepseek-v3"]
        < per_layer["glm-5"]
    )
    # DeepSeek-V3: 3 dense + 58 MoE layers, MLA everywhere: 2 + 12 + (4 or 9 + 4)
    assert eager_launches(get_model("deepseek-v3")) == 61 * (2 + 12) + 3 * 4 + 58 * 13


@pytest.mark.parametrize("name", ["llama-3.1-8b", "llama-3.1-70b", "mistral-7b"])
def test_a_dense_gqa_model_counts_its_layers(name: str) -> None:
    model = get_model(name)
    assert eager_layer_units(model) == model.num_layers  # priced exactly as before


@pytest.mark.parametrize("engine", ["sglang", "trtllm"])
@pytest.mark.parametrize("name", ["llama-3.1-70b", "deepseek-v3", "qwen3.5-397b-a17b"])
def test_an_eager_prompt_step_pays_its_launches_times_the_cost_per_launch(
    engine: str, name: str
) -> None:
    step = _step(name, _plan(engine))
    eager = _terms(step, PROMPT).prefill_layers_overhead_s
    assert eager == pytest.approx(eager_launches(get_model(name)) * PER_LAUNCH_S, rel=1e-12)
    # a host-bound step (the launch cost far above the GPU's work) takes its launches' time
    slow = EFF.replace(prefill_layer_overhead_s=DENSE_LAYER * 100 * US)
    free = EFF.replace(prefill_layer_overhead_s=0.0)
    host_s = eager_launches(get_model(name)) * 100 * US
    assert _step(name, _plan(engine), slow)(PROMPT) - _step(name, _plan(engine), free)(
        PROMPT
    ) == pytest.approx(host_s, rel=1e-9)
    assert host_s / _step(name, _plan(engine), slow)(PROMPT) > 0.8  # most of the step


@pytest.mark.parametrize("name", ["llama-3.1-70b", "deepseek-v3"])
def test_a_graphed_step_pays_no_launches(name: str) -> None:
    for engine in ("vllm", "sglang", "trtllm"):
        assert (
            _terms(_step(name, _plan(engine)), decode_batch(64, 64_000)).prefill_layers_overhead_s
            == 0
        )
    full = capture_plan(
        "vllm", mode="FULL", max_num_seqs=256, max_num_batched_tokens=8192,
        gpu_memory_bytes=180 * GB, tensor_parallel_size=8,
    )  # fmt: skip
    small_prompt = BatchShape(prefill_chunks=(ChunkShape(100),))
    assert _terms(_step(name, full), small_prompt).prefill_layers_overhead_s == 0.0


def test_a_compiled_model_launches_only_its_attention_one_op_a_layer() -> None:
    # vLLM's piecewise graphs: MoE, MLA projections and norms run compiled; a MoE + MLA
    # layer's eager launch costs what a dense layer's does
    for name in ("llama-3.1-70b", "deepseek-v3"):
        model = get_model(name)
        eager = _terms(_step(name, _plan("vllm")), PROMPT).prefill_layers_overhead_s
        assert eager == pytest.approx(model.num_layers * DENSE_LAYER * PER_LAUNCH_S, rel=1e-12)
    deepseek = _terms(_step("deepseek-v3", _plan("sglang")), PROMPT).prefill_layers_overhead_s
    assert deepseek > _terms(_step("deepseek-v3", _plan("vllm")), PROMPT).prefill_layers_overhead_s
    assert _plan("vllm").compiled and not _plan("sglang").compiled and not _plan("trtllm").compiled


@pytest.mark.parametrize("name", ["llama-3.1-8b", "llama-3.1-70b", "mistral-7b"])
def test_a_dense_gqa_model_pays_layer_overhead_per_layer(name: str) -> None:
    model = get_model(name)
    assert layer_units(model) == model.num_layers  # priced exactly as before


def test_a_graphed_layer_pays_its_kernels_less_the_indexer() -> None:
    # DeepSeek-V3: MLA + MoE with a shared expert, 27 kernels a MoE layer, 18 a dense one
    assert layer_units(get_model("deepseek-v3")) == (3 * 18 + 58 * 27) / 12
    # GLM-5's indexer has its own fixed time (`indexer_overhead_s`): not counted twice
    glm = get_model("glm-5")
    assert layer_units(glm) == (eager_launches(glm) - INDEXER * glm.num_kv_cache_layers) / 12
    assert layer_units(glm) / glm.num_layers < eager_layer_units(glm) / glm.num_layers
    # a MoE layer without shared experts (MiniMax, Qwen3) 17 kernels
    assert layer_units(get_model("qwen3-235b-a22b")) == 94 * 17 / 12


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_a_decode_step_pays_layer_overhead_per_kernel(engine: str) -> None:
    # every decode step, graphed or not, pays layer_overhead_s per 12 kernels on its first
    # stream: a MoE + MLA model's fixed time is its kernels' (27 a MoE layer, less the shared
    # experts' on a second stream: `test_shared_experts_stream`), not its layers' alone
    eff = EfficiencyFactors(layer_overhead_s=DENSE_LAYER * 4 * US)  # 4 us a kernel
    batch = decode_batch(8, 8_000)
    left = ENGINE_SHARED_EXPERTS[EnginePreset.parse(engine)].kernels_left
    for name in ("llama-3.1-70b", "deepseek-v3", "glm-5"):
        term = _terms(_step(name, _plan(engine), eff), batch).layers_overhead_s
        assert term == pytest.approx(layer_units(get_model(name), left) * DENSE_LAYER * 4 * US)
    slow = eff.replace(layer_overhead_s=2 * DENSE_LAYER * 4 * US)
    deepseek = (3 * 18 + 58 * (27 - 4 + left)) / 12
    for name, units in (("llama-3.1-70b", 80), ("deepseek-v3", deepseek)):
        extra = _step(name, _plan(engine), slow)(batch) - _step(name, _plan(engine), eff)(batch)
        assert extra == pytest.approx(units * DENSE_LAYER * 4 * US, rel=1e-9)
