"""Query / key norms over every head (`ModelSpec.qk_norm_across_heads`, MiniMax-M2): under
tensor parallelism each layer sums the ranks' variances, one more all-reduce and four more
kernels a layer (`perf.launches.QK_NORM_ACROSS_HEADS`, `perf.constants._qk_norm_allreduces`)."""

from __future__ import annotations

import dataclasses

import pytest

from llmsizer.perf.batch_shape import decode_batch
from llmsizer.perf.constants import StepConstants
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.efficiency import EfficiencyFactors
from llmsizer.perf.launches import (
    DENSE_LAYER,
    DENSE_MLP,
    GQA_ATTENTION,
    MOE_ROUTED,
    NORMS,
    QK_NORM_ACROSS_HEADS,
    eager_launches,
    layer_units,
)
from llmsizer.perf.step import StepModel
from llmsizer.specs import get_model
from llmsizer.specs.hf_config import model_from_hf_config

LAYERS = 62  # MiniMax-M2.5: 62 softmax + MoE layers, 256 experts, no shared expert
EFF = EfficiencyFactors()


def _constants(tp: int, *, across: bool = True, dp: int = 1, ep: int = 1) -> StepConstants:
    dep = Deployment.from_names(
        "minimax-m2.5", "b200", "fp8", kv_cache_dtype="fp8", tensor_parallel_size=tp,
        attention_dp_size=dp, expert_parallel_size=ep,
    )  # fmt: skip
    if not across:
        dep = dataclasses.replace(
            dep, model=dataclasses.replace(dep.model, qk_norm_across_heads=False)
        )
    return StepModel(dep, EFF).constants


def test_minimax_m2_norms_q_and_k_over_every_head() -> None:
    assert get_model("minimax-m2.5").qk_norm_across_heads
    for name in ("kimi-k2.5", "qwen3-235b-a22b", "llama-3.1-70b", "deepseek-r1"):
        assert not get_model(name).qk_norm_across_heads, name


@pytest.mark.parametrize(
    ("fields", "across"),
    [
        ({"use_qk_norm": True, "qk_norm_type": "per_layer"}, True),
        ({"use_qk_norm": True, "qk_norm_type": "per_head"}, False),
        ({"use_qk_norm": True}, False),  # a config that does not say: per head (Qwen3's)
        ({"use_qk_norm": False, "qk_norm_type": "per_layer"}, False),
        ({}, False),
    ],
)
def test_the_config_says_whether_the_norms_span_every_head(
    fields: dict[str, object], across: bool
) -> None:
    config = {
        "model_type": "minimax_m2", "hidden_size": 512, "intermediate_size": 256,
        "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
        "head_dim": 64, "vocab_size": 1024, **fields,
    }  # fmt: skip
    assert model_from_hf_config(config, name="tiny").qk_norm_across_heads is across


def test_its_layer_launches_four_more_kernels() -> None:
    """Norms 2, GQA attention 6 and the norms' 4, routed experts 9: 21 a layer."""
    m = get_model("minimax-m2.5")
    per_layer = NORMS + GQA_ATTENTION + QK_NORM_ACROSS_HEADS + MOE_ROUTED
    assert per_layer == 21
    assert eager_launches(m) == LAYERS * per_layer
    assert layer_units(m) == pytest.approx(LAYERS * 21 / DENSE_LAYER)  # 1.75 a layer, was 1.42
    dense = get_model("llama-3.1-70b")
    assert eager_launches(dense) == dense.num_layers * (NORMS + GQA_ATTENTION + DENSE_MLP)


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_each_layer_adds_an_all_reduce_of_almost_no_bytes(tp: int) -> None:
    with_norms, without = _constants(tp), _constants(tp, across=False)
    assert without.num_allreduces == 2 * LAYERS
    assert with_norms.num_allreduces == 3 * LAYERS
    assert with_norms.allreduce_latency_s == without.allreduce_latency_s  # one NVSwitch hop pair
    # the activations' bytes over the link are the same in all: the variances add none
    link = with_norms.num_allreduces * with_norms.allreduce_s_per_token
    assert link == pytest.approx(without.num_allreduces * without.allreduce_s_per_token)


def test_one_gpu_reduces_nothing() -> None:
    c = _constants(1)
    assert c.num_allreduces == 0


def test_under_attention_data_parallelism_the_attention_group_adds_it() -> None:
    """TP 2 x DP 2 with EP 4: the MoE exchange and the attention all-reduce a layer, and the
    norms' over the attention's 2 GPUs; TP 1 x DP 4: no attention group, nothing added."""
    with_norms, without = _constants(2, dp=2, ep=4), _constants(2, across=False, dp=2, ep=4)
    assert (without.num_allreduces, with_norms.num_allreduces) == (2 * LAYERS, 3 * LAYERS)
    link = with_norms.num_allreduces * with_norms.allreduce_s_per_token
    assert link == pytest.approx(without.num_allreduces * without.allreduce_s_per_token)
    latency = with_norms.num_allreduces * with_norms.allreduce_latency_s
    added = LAYERS * Deployment.from_names("minimax-m2.5", "b200", "fp8").allreduce_hops(2)
    assert latency == pytest.approx(
        without.num_allreduces * without.allreduce_latency_s + added * EFF.collective_hop_latency_s
    )
    assert (
        _constants(1, dp=4, ep=4).num_allreduces
        == _constants(1, across=False, dp=4, ep=4).num_allreduces
    )


def test_a_tp4_decode_step_pays_the_norms_latency_and_kernels() -> None:
    """At 4 clients the step is dearer by 62 all-reduces' hops and 62 x 4 kernels."""
    dep = Deployment.from_names("minimax-m2.5", "b200", "fp8", kv_cache_dtype="fp8",
                                tensor_parallel_size=4)  # fmt: skip
    plain = dataclasses.replace(
        dep, model=dataclasses.replace(dep.model, qk_norm_across_heads=False)
    )
    batch = decode_batch(4, 1536)
    extra = StepModel(dep, EFF)(batch) - StepModel(plain, EFF)(batch)
    hops = dep.allreduce_hops(4) * EFF.collective_hop_latency_s
    kernels = QK_NORM_ACROSS_HEADS / DENSE_LAYER * EFF.layer_overhead_s
    assert extra == pytest.approx(LAYERS * (hops + kernels), rel=1e-6)
