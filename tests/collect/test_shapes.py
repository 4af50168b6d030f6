"""The shapes collect times carry the work the performance model counts (no PyTorch)."""

from __future__ import annotations

import pytest

from llmsizer.collect.shapes import (
    ACTIVATION_BYTES,
    FULL,
    QUICK,
    decode_work,
    elementwise_bytes,
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
    per_layer = sum(g.in_features * g.out_features for g in gemms if g.per_layer)
    assert per_layer * m.num_layers == m.dense_linear_params
    (head,) = [g for g in gemms if not g.per_layer]
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


@pytest.mark.parametrize("name", ["mixtral-8x7b", "deepseek-v3"])
def test_models_collect_cannot_time_are_refused_by_name(name: str) -> None:
    with pytest.raises(ValueError, match="does not time yet"):
        layer_gemms(get_model(name))


def test_the_default_grid_spans_one_to_16k_tokens_and_quick_is_smaller() -> None:
    assert FULL.gemm_tokens[0] == 1 and FULL.gemm_tokens[-1] == 16384
    assert max(QUICK.gemm_tokens) < max(FULL.gemm_tokens)
    assert len(QUICK.check_points) >= 2
