"""A decode step replayed from a graph runs a MoE layer's shared experts on a second CUDA
stream: only the kernels left on the first add to its fixed time (`perf.cuda_graphs.
SharedExpertsStream`, `perf.launches.layer_units`)."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from llmsizer.perf.batch_shape import BatchShape, ChunkShape, aggregate, decode_batch
from llmsizer.perf.cuda_graphs import CudaGraphs, SharedExpertsStream, capture_plan
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.efficiency import EfficiencyFactors
from llmsizer.perf.launches import DENSE_LAYER, SHARED_EXPERT, eager_launches, layer_units
from llmsizer.perf.step import StepModel, StepTerms, step_terms
from llmsizer.specs import get_model
from llmsizer.units import GB, US

PER_KERNEL_S = 4 * US
EFF = EfficiencyFactors(layer_overhead_s=DENSE_LAYER * PER_KERNEL_S)


def _step(model: str, engine: str, tp: int = 8) -> StepModel:
    graphs = capture_plan(
        engine, max_num_seqs=256, max_num_batched_tokens=8192, gpu_memory_bytes=180 * GB,
        tensor_parallel_size=tp,
    )  # fmt: skip
    d = Deployment.from_names(model, "b200-sxm", "fp8", tensor_parallel_size=tp)
    return StepModel(d, EFF, graphs)


def _fixed_s(step: StepModel, batch: BatchShape) -> float:
    c = step.constants
    terms = step_terms(c, aggregate(batch, c.window), step.cuda_graphs)
    return StepTerms._make(terms).layers_overhead_s


def test_vllm_kimi_decode_layer_counts_fewer_kernels_than_its_eager_launches() -> None:
    # Kimi-K2.5 (DeepSeek-V3's layers: MLA, 384 routed experts and one shared) on vLLM, a
    # graphed decode step of 8 sequences. A MoE layer's eager count is 27 (section 20):
    # norms 2, MLA 12, routed experts 9 (router GEMM, top-k, align / sort, zeroing, two
    # grouped GEMMs, activation, top-k sum, all-reduce), shared expert 4 (gate-up GEMM,
    # activation, down GEMM, add). vLLM's FusedMoE forks the shared expert's GEMMs and
    # activation onto its shared-experts stream at <= 256 tokens, copying the input first:
    # 27 - 4 + 2 (clone, add) = 25 on the first stream.
    kimi = get_model("kimi-k2.5")
    step = _step("kimi-k2.5", "vllm")
    dense, moe = kimi.num_dense_layers, kimi.num_moe_layers
    graphed = (dense * 18 + moe * 25) / DENSE_LAYER
    assert layer_units(kimi, 2) == pytest.approx(graphed)
    assert _fixed_s(step, decode_batch(8, 8_000)) == pytest.approx(graphed * 12 * PER_KERNEL_S)
    assert graphed < layer_units(kimi) == (dense * 18 + moe * 27) / DENSE_LAYER
    assert graphed / kimi.num_layers < eager_launches(kimi) / DENSE_LAYER / kimi.num_layers


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_steps_without_the_second_stream_pay_every_kernel(engine: str) -> None:
    full = layer_units(get_model("deepseek-v3")) * DENSE_LAYER * PER_KERNEL_S
    step = _step("deepseek-v3", engine)
    prompt = BatchShape(prefill_chunks=(ChunkShape(1024),))  # eager (or piecewise)
    assert _fixed_s(step, prompt) == pytest.approx(full)
    assert _fixed_s(step, decode_batch(8, 8_000)) < full


def test_vllm_runs_the_shared_experts_inline_above_its_threshold() -> None:
    step = _step("deepseek-v3", "vllm")
    full = layer_units(get_model("deepseek-v3")) * DENSE_LAYER * PER_KERNEL_S
    assert _fixed_s(step, decode_batch(256, 256 * 1000)) < full
    assert _fixed_s(step, decode_batch(257, 257 * 1000)) == pytest.approx(full)  # graph 272


@pytest.mark.parametrize(
    ("name", "engine", "changed"),
    [
        ("llama-3.1-70b", "vllm", False),  # dense: no experts
        ("qwen3-235b-a22b", "trtllm", False),  # no shared experts
        ("qwen3.5-397b-a17b", "sglang", False),  # not DeepSeek's block: not sourced
        ("qwen3.5-397b-a17b", "vllm", True),  # vLLM's FusedMoE: every block
        ("glm-5", "sglang", True),  # MLA (DeepSeek's block)
    ],
)
def test_which_models_each_engine_overlaps(name: str, engine: str, changed: bool) -> None:
    step = _step(name, engine)
    full = layer_units(get_model(name)) * DENSE_LAYER * PER_KERNEL_S
    assert (_fixed_s(step, decode_batch(8, 8_000)) < full) is changed


def test_a_dense_model_prices_to_the_bit_as_before() -> None:
    for engine in ("vllm", "sglang", "trtllm"):
        step = _step("llama-3.1-70b", engine)
        assert step.cuda_graphs is not None
        no_stream = dataclasses.replace(step.cuda_graphs, shared_experts=None)
        bare = StepModel(step.deployment, EFF, no_stream)
        for batch in (decode_batch(8, 8_000), decode_batch(100, 50_000)):
            assert step(batch) == bare(batch)


def test_kernels_left_are_checked_and_graphs_pickle_with_the_stream() -> None:
    with pytest.raises(ValueError, match="shared_expert 5 must be 0-4"):
        layer_units(get_model("deepseek-v3"), SHARED_EXPERT + 1)
    graphs = CudaGraphs((1, 2, 4), shared_experts=SharedExpertsStream(1, True))
    assert pickle.loads(pickle.dumps(graphs)) == graphs
