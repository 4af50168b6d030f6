"""Attention DP's MoE token exchange (`llmsizer.perf.moe_comm`): an all-to-all sends each
rank's routed copies, not every rank's tokens, and pays a measured fixed latency."""

from __future__ import annotations

import random

import pytest

from llmsizer.calibrate.features import StepFeaturizer, price
from llmsizer.instance import DeploymentSpec, make_instance
from llmsizer.perf.batch_shape import decode_batch
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.efficiency import EfficiencyFactors
from llmsizer.perf.moe_comm import (
    A2A_BACKENDS,
    dispatch_bytes_per_element,
    engine_a2a_backend,
)
from llmsizer.perf.step import StepModel
from llmsizer.specs.dtypes import Precision
from tests.calibrate.test_features import random_batch, random_factors

H, K, LAYERS, MOE_LAYERS = 7168, 8, 61, 58  # DeepSeek-R1: hidden, top-k, layers, MoE layers


def dep(dp: int, a2a: str | None = None, gpu: str = "gb200", precision: str = "fp4") -> Deployment:
    return Deployment.from_names(
        "deepseek-r1", gpu, precision, kv_cache_dtype="fp8", attention_dp_size=dp,
        expert_parallel_size=dp, moe_a2a_backend=a2a,
    )  # fmt: skip


def test_the_low_latency_all_to_all_is_priced_by_hand() -> None:
    # DEP48 NVFP4 on GB200, default factors (link 0.75 x 900 GB/s, 4 us hops): per MoE layer
    # a rank token sends 8 x 47/48 copies of 7168 elements at 0.5625 B (NVFP4 + scales) and
    # takes them back at 2 B; DeepEP low latency's fixed 16.6 + 18.1 us (AIC's GB200 data)
    eff = EfficiencyFactors()
    c = StepModel(dep(48, "deepep_low_latency"), eff).constants
    share = MOE_LAYERS / LAYERS
    link = 900e9 * eff.interconnect_efficiency
    per_token = share * K * 47 / 48 * H * (0.5 + 1 / 16 + 2.0) / link
    assert c.num_allreduces == LAYERS  # one exchange a layer, the MoE layers' on average
    assert c.allreduce_s_per_token == pytest.approx(per_token, rel=1e-12)
    hops = share * (16.6 + 18.1) / 4.0
    assert c.allreduce_latency_s == pytest.approx(hops * eff.collective_hop_latency_s)
    # the step pays each MoE layer's fixed latency once: 58 x 34.7 us at the engine's hop
    assert c.num_allreduces * c.allreduce_latency_s == pytest.approx(MOE_LAYERS * 34.7e-6)


def test_dispatch_dtype_is_the_experts_input_with_its_scales() -> None:
    assert dispatch_bytes_per_element(Precision.FP4, 2.0) == 0.5625  # 4 bits + FP8 per 16
    assert dispatch_bytes_per_element(Precision.FP8_BLOCK, 2.0) == 1.03125  # + FP32 per 128
    assert dispatch_bytes_per_element(Precision.BF16, 2.0) == 2.0


@pytest.mark.parametrize("dp", [16, 32, 48])
@pytest.mark.parametrize("a2a", sorted(A2A_BACKENDS))
def test_an_all_to_all_is_cheaper_than_the_gather_past_top_k_ranks(dp: int, a2a: str) -> None:
    # the gather moves 2 (W - 1) / W x D token copies per rank token, the all-to-all k: less
    # traffic whenever D > k; the step is cheaper once the traffic outweighs the exchange's
    # fixed latency (35-82 us against the gather's two hops): at a wide decode pool's 128
    # and 256 sequences a rank (a single sequence a rank gathers faster)
    gather, exchange = StepModel(dep(dp)), StepModel(dep(dp, a2a))
    assert exchange.constants.allreduce_s_per_token < gather.constants.allreduce_s_per_token
    for per_rank in (128, 256):
        batch = decode_batch(per_rank * dp, per_rank * dp * 2000)
        assert exchange(batch) < gather(batch)
    assert exchange(decode_batch(dp, dp * 2000)) > gather(decode_batch(dp, dp * 2000))


def test_an_all_to_all_permutes_only_the_copies_a_rank_receives() -> None:
    # gathered: every rank's k copies (D x 2 k h per rank token); exchanged: its own k
    gather, exchange = StepModel(dep(32)).constants, StepModel(dep(32, "nvlink_two_sided"))
    saved = MOE_LAYERS * 2 * K * H * (32 - 1) * 2.0  # BF16 activations
    assert gather.elementwise_bytes_per_token - exchange.constants.elementwise_bytes_per_token == (
        pytest.approx(saved)
    )


def test_the_gather_named_is_the_deployment_without_an_all_to_all() -> None:
    batch = decode_batch(32 * 40, 32 * 40 * 1500)
    named, plain = StepModel(dep(32, "allgather_reducescatter")), StepModel(dep(32))
    assert named.constants == plain.constants and named(batch) == plain(batch)


def test_features_price_an_all_to_all_as_the_step_model() -> None:
    rng = random.Random(5)
    d = dep(16, "deepep_low_latency")
    featurize = StepFeaturizer(d)
    for _ in range(30):
        batch, eff = random_batch(rng), random_factors(rng)
        expected = StepModel(d, eff)(batch)
        assert float(price(featurize(batch), eff)) == pytest.approx(expected, rel=1e-12)


def test_bad_exchanges_are_refused_with_what_is_allowed() -> None:
    with pytest.raises(ValueError, match="'pplx' is not known; allowed: allgather"):
        dep(16, "pplx")
    with pytest.raises(ValueError, match=r"attention_dp_size > 1 .* got attention_dp_size 1"):
        Deployment.from_names(
            "deepseek-r1", "gb200", "fp4", tensor_parallel_size=8, expert_parallel_size=8,
            moe_a2a_backend="deepep_low_latency",
        )  # fmt: skip
    with pytest.raises(ValueError, match="expert_parallel_size 1 of 16 GPUs"):
        Deployment.from_names(
            "deepseek-r1", "gb200", "fp4", attention_dp_size=16,
            moe_a2a_backend="deepep_low_latency",
        )  # fmt: skip


@pytest.mark.parametrize(
    ("engine", "domain", "dp", "ep", "expected"),
    [
        ("trtllm", 72, 32, 32, "nvlink_two_sided"),  # GB200 NVL72 DEP32
        ("trtllm", 72, 8, 8, None),  # moe_ep_size <= top_k: the gather
        ("trtllm", 8, 8, 8, None),  # HGX B200: no multi-node NVLink memory
        ("trtllm", 72, 1, 8, None),  # no attention DP
        ("trtllm", 72, 32, 8, None),  # MoE TP 4: the gather
        ("sglang", 72, 32, 32, None),  # --moe-a2a-backend none unless the launch names one
        ("vllm", 72, 32, 32, None),
    ],
)
def test_the_engines_own_exchange(engine, domain, dp, ep, expected) -> None:
    kwargs = dict(attention_dp_size=dp, expert_parallel_size=ep, moe_world_size=dp, top_k=K)
    assert engine_a2a_backend(engine, nvlink_domain=domain, **kwargs) == expected


def test_a_tensorrt_llm_wide_dp_instance_runs_its_nvlink_all_to_all() -> None:
    spec = {"model": "deepseek-r1", "gpu": "gb200", "precision": "fp4", "kv_cache_dtype": "fp8",
            "tp": 1, "dp": 32, "ep": 32}  # fmt: skip
    trt = make_instance(
        DeploymentSpec.model_validate({**spec, "engine": "trtllm"}), max_model_len=4096
    )
    assert trt.deployment.moe_a2a_backend == "nvlink_two_sided"
    sgl = make_instance(
        DeploymentSpec.model_validate({**spec, "engine": "sglang"}), max_model_len=4096
    )
    assert sgl.deployment.moe_a2a_backend is None
    named = DeploymentSpec.model_validate(
        {**spec, "engine": "sglang", "moe_a2a_backend": "deepep_low_latency"}
    )
    assert make_instance(named, max_model_len=4096).deployment.moe_a2a_backend == (
        "deepep_low_latency"
    )
    with pytest.raises(ValueError, match="moe_a2a_backend 'deepep'"):
        DeploymentSpec.model_validate({**spec, "moe_a2a_backend": "deepep"})
