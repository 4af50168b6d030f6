"""The shapes collect times carry the work the performance model counts (no PyTorch)."""

from __future__ import annotations

import pytest

from llmsizer.collect.shapes import (
    ACTIVATION_BYTES,
    FULL,
    QUICK,
    decode_work,
    elementwise_bytes,
    expert_gemms,
    gemm_launches_per_layer,
    layer_gemms,
    prefill_work,
)
from llmsizer.perf import Deployment
from llmsizer.perf.constants import build_constants
from llmsizer.perf.efficiency import default_efficiency
from llmsizer.specs import Precision, get_gpu, get_model


@pytest.mark.parametrize("name", ["llama-3.1-8b", "qwen3-8b", "mistral-7b", "gpt-j-6b"])
def test_layer_gemms_hold_every_linear_weight_of_the_model(name: str) -> None:
    m = get_model(name)
    gemms = layer_gemms(m)
    *layers, head = gemms
    assert sum(g.in_features * g.out_features * g.count for g in layers) == m.dense_linear_params
    assert all(g.count == m.num_layers for g in layers)
    assert gemm_launches_per_layer(m) == 4
    assert head.name == "lm_head" and head.count == 1
    assert head.in_features * head.out_features == m.vocab_size * m.hidden_size


def test_llama_8b_fused_shapes_are_vllms() -> None:
    shapes = {
        g.name: (g.in_features, g.out_features) for g in layer_gemms(get_model("llama-3.1-8b"))
    }
    assert shapes["qkv_proj"] == (4096, 4096 + 2 * 1024)  # 32 query heads, 8 KV heads of 128
    assert shapes["gate_up_proj"] == (4096, 2 * 14336)
    assert shapes["down_proj"] == (14336, 4096)


def test_counted_work_is_the_step_models() -> None:
    """Per layer and token, the bytes and FLOPs collect divides by are perf's constants."""
    m = get_model("llama-3.1-8b")
    c = build_constants(Deployment(m, get_gpu("h100-sxm"), Precision.BF16), default_efficiency())
    assert elementwise_bytes(m, 1) * m.num_layers + ACTIVATION_BYTES * m.hidden_size == (
        pytest.approx(c.elementwise_bytes_per_token)
    )
    flops, _ = decode_work(m, batch=1, length=1)
    assert flops == pytest.approx(c.decode_flops_per_pair)
    # a causal prompt of L tokens has L (L + 1) / 2 query-key pairs
    assert prefill_work(m, 4)[0] == pytest.approx(10 * c.prefill_flops_per_pair)
    _, kv_bytes = decode_work(m, batch=1, length=1000)
    act = c.attention_act_bytes_per_token / m.num_layers
    assert kv_bytes == pytest.approx(1000 * c.kv_bytes_per_token_per_layer + act)


def test_gemm_bytes_read_weights_once() -> None:
    (qkv, *_) = layer_gemms(get_model("llama-3.1-8b"))
    one, many = qkv.bytes(1, 2.0), qkv.bytes(1000, 2.0)
    assert many - one == pytest.approx(999 * ACTIVATION_BYTES * (4096 + 6144))
    assert qkv.flops(1000) == 1000 * qkv.flops(1)


@pytest.mark.parametrize("name", ["qwen3.5-397b-a17b", "glm-5"])
def test_models_collect_cannot_time_are_refused_by_name(name: str) -> None:
    with pytest.raises(ValueError, match="does not time yet"):
        layer_gemms(get_model(name))


@pytest.mark.parametrize("name", ["mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3", "kimi-k2.5"])
def test_moe_and_mla_gemms_hold_the_weights_the_model_prices(name: str) -> None:
    """Every token's GEMMs are the model's dense weights plus its routers; the routed
    experts' grouped GEMMs run 2 k P_e FLOPs a token and read the experts hit once."""
    m = get_model(name)
    assert m.moe is not None
    c = build_constants(Deployment(m, get_gpu("h100-sxm"), Precision.BF16), default_efficiency())
    *layers, _ = layer_gemms(m)
    weights = sum(g.in_features * g.out_features * g.count for g in layers)
    assert weights == m.dense_linear_params + m.num_moe_layers * m.router_params
    assert 2.0 * weights == pytest.approx(c.dense_flops_per_token)
    experts = expert_gemms(m)
    assert sum(e.flops(1) for e in experts) == pytest.approx(c.expert_flops_per_token)
    # one token: its k copies, each reading one expert's weights
    act = sum(
        e.bytes(1, 2.0) - e.experts_hit(1) * e.in_features * e.out_features * 2.0 for e in experts
    )
    assert act == pytest.approx(c.expert_act_bytes_per_token)
    assert sum(e.in_features * e.out_features for e in experts) == m.expert_params
    big = experts[0]
    assert big.experts_hit(1) == m.moe.num_experts_per_tok
    assert big.experts_hit(1 << 20) == m.moe.num_experts  # every expert at a large batch
    assert big.experts_hit(64) * big.rows_per_expert(64) >= 64 * m.moe.num_experts_per_tok


def test_mla_projections_are_vllms_and_decode_is_absorbed() -> None:
    m = get_model("deepseek-v3")
    shapes = {g.name: (g.in_features, g.out_features) for g in layer_gemms(m)}
    assert shapes["q_a_proj"] == (7168, 1536)
    assert shapes["q_b_proj"] == (1536, 128 * 192)  # 128 heads of nope 128 + rope 64
    assert shapes["kv_a_proj_with_mqa"] == (7168, 512 + 64)
    assert shapes["kv_b_proj"] == (512, 128 * (128 + 128))
    c = build_constants(Deployment(m, get_gpu("h100-sxm"), Precision.BF16), default_efficiency())
    flops, kv_bytes = decode_work(m, batch=1, length=1000)
    assert flops == pytest.approx(1000 * c.decode_flops_per_pair)
    act = c.attention_act_bytes_per_token / m.num_layers
    assert kv_bytes == pytest.approx(1000 * c.kv_bytes_per_token_per_layer + act)
    assert prefill_work(m, 4)[0] == pytest.approx(10 * c.prefill_flops_per_pair)


@pytest.mark.parametrize("name", ["mixtral-8x7b", "deepseek-v3"])
def test_moe_elementwise_bytes_are_the_step_models(name: str) -> None:
    m = get_model(name)
    c = build_constants(Deployment(m, get_gpu("h100-sxm"), Precision.BF16), default_efficiency())
    per_token = (
        m.num_dense_layers * elementwise_bytes(m, 1)
        + m.num_moe_layers * elementwise_bytes(m, 1, moe=True)
        + ACTIVATION_BYTES * m.hidden_size
    )
    assert per_token == pytest.approx(c.elementwise_bytes_per_token)


def test_the_default_grid_spans_one_to_16k_tokens_and_quick_is_smaller() -> None:
    assert FULL.gemm_tokens[0] == 1 and FULL.gemm_tokens[-1] == 16384
    assert max(QUICK.gemm_tokens) < max(FULL.gemm_tokens)
    assert len(QUICK.check_points) >= 2


def test_an_fp8_gemm_runs_its_widths_padded_to_16() -> None:
    """`torch._scaled_mm` needs widths in multiples of 16: Mixtral's router (4096 -> 8
    experts) is timed as 4096 -> 16 and counted so; a width already a multiple stays."""
    from llmsizer.collect.kernels import fp8_gemm
    from llmsizer.collect.shapes import Gemm

    router = fp8_gemm(Gemm("router", 4096, 8, 32))
    assert (router.in_features, router.out_features, router.count) == (4096, 16, 32)
    assert router.flops(16) == 2 * 16 * 4096 * 16
    assert fp8_gemm(Gemm("o_proj", 4096, 4096, 32)) == Gemm("o_proj", 4096, 4096, 32)
