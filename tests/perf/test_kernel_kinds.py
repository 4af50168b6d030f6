"""Kinds of work only some models have, each at a factor of its own (`EfficiencyFactors`):
the sparse-attention indexer's fixed time per layer (GLM-5) and the dequantisation of
weight-only (W4A16) experts (Kimi-K2.5 INT4)."""

import pytest

from llmsizer.perf.batch_shape import aggregate, decode_batch, prefill_batch
from llmsizer.perf.efficiency import EfficiencyFactors
from llmsizer.perf.step import StepTerms, step_terms
from llmsizer.specs import get_model
from llmsizer.units import US
from tests.perf.conftest import make_step_model

BASE = EfficiencyFactors()


def terms(model: str, precision: str, eff: EfficiencyFactors, batch, tp: int = 8) -> StepTerms:
    c = make_step_model(model, "b200", precision, eff, tensor_parallel_size=tp).constants
    return StepTerms._make(step_terms(c, aggregate(batch, c.window)))


@pytest.mark.parametrize("batch", [decode_batch(4, 1_000), prefill_batch(1, 3_000)])
def test_the_indexer_costs_its_overhead_once_per_sparse_layer_per_step(batch):
    glm = get_model("glm-5")
    assert glm.sparse_attention is not None
    for overhead in (50 * US, 120 * US):
        t = terms("glm-5", "fp8", BASE.replace(indexer_overhead_s=overhead), batch)
        assert t.indexer_overhead_s == pytest.approx(glm.num_kv_cache_layers * overhead)
    # a step's time moves by exactly that term, whatever the batch
    slow = make_step_model("glm-5", "b200", "fp8", BASE.replace(indexer_overhead_s=200 * US),
                           tensor_parallel_size=8)  # fmt: skip
    none = make_step_model("glm-5", "b200", "fp8", BASE.replace(indexer_overhead_s=0.0),
                           tensor_parallel_size=8)  # fmt: skip
    assert slow(batch) - none(batch) == pytest.approx(glm.num_kv_cache_layers * 200 * US)


def test_models_without_an_indexer_or_weight_only_experts_have_neither_term():
    for model, precision in (
        ("deepseek-v3", "fp8"),
        ("kimi-k2.5", "nvfp4"),
        ("llama-3.1-8b", "fp8"),
    ):
        t = terms(model, precision, BASE, decode_batch(16, 1_000), tp=1)
        assert t.indexer_overhead_s == 0.0
        assert t.experts_dequant_s == 0.0


def test_the_indexer_weights_are_read_whole_on_every_tensor_parallel_rank():
    """SGLang's indexer projections are replicated: a GPU of TP8 reads all of them, not 1/8."""
    glm = get_model("glm-5")
    assert glm.mla is not None and glm.sparse_attention is not None
    per_layer = glm.sparse_attention.projection_params(glm.hidden_size, glm.mla.q_lora_rank)
    for tp in (1, 8):
        c = make_step_model("glm-5", "b200", "fp8", tensor_parallel_size=tp).constants
        without = glm.dense_linear_params * 1.0 / tp  # fp8: one byte a weight
        router = glm.num_moe_layers * glm.router_params * 2.0
        replicated = glm.num_kv_cache_layers * per_layer * (1 - 1 / tp)
        assert c.dense_weight_bytes == pytest.approx(without + router + replicated)
    # at TP8 the indexer weights are 9.4M a layer: 7/8 of 78 layers' more than a 1/8 share
    assert per_layer == pytest.approx(9.4e6, rel=0.01)


def test_weight_only_experts_reach_the_harmonic_bandwidth_of_both_passes():
    """W4A16 experts read their bytes at B_experts and dequantise them at B_dequant, one after
    the other: at one token (weight-bound) the experts take bytes / B_experts + bytes /
    B_dequant, i.e. bandwidth 1 / (1 / B_experts + 1 / B_dequant)."""
    eff = BASE.replace(experts_bandwidth_efficiency=0.6, experts_dequant_efficiency=0.4)
    step = make_step_model("kimi-k2.5", "b200", "int4_g32", eff, tensor_parallel_size=8)
    c = step.constants
    t = StepTerms._make(step_terms(c, aggregate(decode_batch(1, 1_000), c.window)))
    kimi = get_model("kimi-k2.5")
    assert kimi.moe is not None
    weight_bytes = kimi.num_moe_layers * kimi.moe.num_experts_per_tok * c.expert_weight_bytes
    hbm = step.deployment.gpu.hbm_bytes_per_s
    assert t.experts_dequant_s == pytest.approx(weight_bytes / (hbm * 0.4))
    achieved = weight_bytes / (max(t.experts_compute_s, t.experts_memory_s) + t.experts_dequant_s)
    # the activations add a little to the memory pass: within 1 % of the harmonic bandwidth
    assert achieved == pytest.approx(hbm / (1 / 0.6 + 1 / 0.4), rel=0.01)
    # the breakdown shows it as a part of its own
    names = [p.name for p in step.breakdown(decode_batch(1, 1_000)).parts]
    assert "experts_dequant" in names


def test_the_dequant_term_grows_with_the_experts_a_batch_touches():
    small = terms("kimi-k2.5", "int4_g32", BASE, decode_batch(1, 1_000))
    large = terms("kimi-k2.5", "int4_g32", BASE, decode_batch(64, 1_000))
    kimi = get_model("kimi-k2.5")
    assert kimi.moe is not None
    # 8 experts at one token; 384 (1 - (1 - 8/384)^64) ~ 283 at 64 (expected distinct)
    hit = kimi.moe.num_experts * (1 - (1 - 8 / kimi.moe.num_experts) ** 64)
    assert large.experts_dequant_s / small.experts_dequant_s == pytest.approx(hit / 8)
