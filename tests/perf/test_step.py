import random
import time

import pytest

from llmsizer.perf.batch_shape import (
    BatchShape,
    ChunkShape,
    decode_batch,
    prefill_batch,
    window_pairs,
)
from llmsizer.perf.roofline import Bound, allreduce_hops
from llmsizer.sim.batch import Batch, PrefillChunk
from tests.perf.conftest import make_step_model

MODELS = ["llama-3.1-8b", "mixtral-8x7b", "deepseek-v3", "gpt-oss-20b", "mistral-7b", "gpt-j-6b"]


def random_batch(rng: random.Random) -> BatchShape:
    chunks = tuple(
        ChunkShape(rng.randint(1, 4096), rng.choice([0, rng.randint(1, 20_000)]))
        for _ in range(rng.randint(0, 4))
    )
    num_decode = rng.randint(0, 300)
    context = num_decode * rng.randint(1, 8000)
    return BatchShape(chunks, num_decode, context)


@pytest.mark.parametrize("model", MODELS)
def test_call_equals_the_breakdown_sum(model):
    step = make_step_model(model, "h200", "fp8", tensor_parallel_size=8, pipeline_parallel_size=1)
    rng = random.Random(7)
    for _ in range(200):
        batch = random_batch(rng)
        assert step(batch) == pytest.approx(step.breakdown(batch).time_s, rel=1e-12)


def test_call_equals_breakdown_with_pipeline_parallelism():
    step = make_step_model(
        "llama-3.1-70b", "h100", tensor_parallel_size=2, pipeline_parallel_size=4
    )
    rng = random.Random(3)
    for _ in range(50):
        batch = random_batch(rng)
        assert step(batch) == pytest.approx(step.breakdown(batch).time_s, rel=1e-12)


def test_the_simulators_batch_type_is_accepted(llama8b):
    sim_batch = Batch((PrefillChunk(512, 0),), num_decode_seqs=3, num_decode_context_tokens=900)
    perf_batch = BatchShape((ChunkShape(512, 0),), 3, 900)
    assert llama8b(sim_batch) == llama8b(perf_batch) > 0


def test_an_empty_batch_costs_nothing(llama8b):
    assert llama8b(BatchShape()) == 0.0
    assert llama8b.breakdown(BatchShape()).parts == ()


def test_window_pairs_match_brute_force():
    for n, ctx, window in [(1, 0, 4), (10, 0, 4), (3, 2, 4), (5, 10, 4), (7, 1, 5), (100, 50, 128)]:
        brute = sum(min(ctx + i, window) for i in range(1, n + 1))
        assert window_pairs(n, ctx, window) == brute


def test_sliding_window_caps_attention_cost():
    mistral = make_step_model("mistral-7b")
    short = mistral.breakdown(decode_batch(64, 4096)).part("decode_attention")
    long = mistral.breakdown(decode_batch(64, 32_000)).part("decode_attention")
    assert long.hbm_bytes == pytest.approx(short.hbm_bytes)


def test_moe_decode_reads_only_the_experts_it_routes_to():
    mixtral = make_step_model("mixtral-8x7b", "h100", tensor_parallel_size=2)
    one = mixtral.breakdown(decode_batch(1, 1000)).part("experts")
    many = mixtral.breakdown(decode_batch(256, 1000)).part("experts")
    expert_bytes = mixtral.constants.expert_weight_bytes * 32  # all MoE layers
    weight_share_one = one.hbm_bytes - mixtral.constants.expert_act_bytes_per_token * 32
    assert weight_share_one == pytest.approx(2 * expert_bytes)  # top-2 of 8
    assert many.hbm_bytes > 7.9 * expert_bytes  # all 8 experts are touched


def test_tensor_parallelism_shards_weights_and_adds_allreduces():
    tp1 = make_step_model("llama-3.1-70b", "h200", tensor_parallel_size=1)
    tp4 = make_step_model("llama-3.1-70b", "h200", tensor_parallel_size=4)
    batch = decode_batch(8, 2000)
    linear1, linear4 = tp1.breakdown(batch).part("linear"), tp4.breakdown(batch).part("linear")
    assert linear4.hbm_bytes == pytest.approx(linear1.hbm_bytes / 4, rel=0.01)
    assert tp1.breakdown(batch).part("allreduce").time_s == 0.0
    allreduce = tp4.breakdown(batch).part("allreduce")
    assert allreduce.bound is Bound.COMMUNICATION
    # 160 all-reduces on NVSwitch: 2 hops each (not a ring's 6), plus 3/4 of the 8 x 8192
    # BF16 activations over each link
    eff = tp4.efficiency
    link = tp4.deployment.link_bytes_per_s(4) * eff.interconnect_efficiency
    expected = 160 * (2 * eff.collective_hop_latency_s + 2 * 3 / 4 * 8 * 8192 * 2 / link)
    assert allreduce.time_s == pytest.approx(expected, rel=1e-9)


def test_allreduce_hops_one_hop_fabric_against_a_ring_over_pcie():
    # H100 SXM: 8 GPUs on NVSwitch; L40S: no NVLink, a ring over PCIe
    on_switch = make_step_model("llama-3.1-70b", "h100-sxm", tensor_parallel_size=8)
    on_pcie = make_step_model("llama-3.1-70b", "l40s", tensor_parallel_size=8)
    hop_s = on_switch.efficiency.collective_hop_latency_s
    assert on_switch.constants.allreduce_latency_s == pytest.approx(2 * hop_s)
    assert on_pcie.constants.allreduce_latency_s == pytest.approx(14 * hop_s)
    assert allreduce_hops(1, one_hop=True) == 0
    assert allreduce_hops(4, one_hop=False) == 6


def test_pipeline_stage_interval_is_a_fraction_of_latency():
    pp1 = make_step_model("llama-3.1-70b", "h100", tensor_parallel_size=2)
    pp4 = make_step_model("llama-3.1-70b", "h100", tensor_parallel_size=2, pipeline_parallel_size=4)
    batch = decode_batch(32, 1000)
    latency, interval = pp4(batch), pp4.breakdown(batch).stage_interval_s
    assert latency == pytest.approx(pp1(batch), rel=0.02)  # same work, in turn
    assert interval < 0.35 * latency
    assert pp1.breakdown(batch).stage_interval_s == pytest.approx(pp1(batch))


def test_lower_precision_speeds_up_memory_bound_decode():
    bf16 = make_step_model("llama-3.1-8b", "h100", "bf16")
    fp8 = make_step_model("llama-3.1-8b", "h100", "fp8")
    int4 = make_step_model("llama-3.1-8b", "h100", "int4")
    batch = decode_batch(1, 1000)
    assert bf16(batch) > fp8(batch) > int4(batch)


def test_fp8_doubles_compute_bound_prefill_speed_on_hopper():
    bf16 = make_step_model("llama-3.1-70b", "h100", "bf16", tensor_parallel_size=4)
    fp8 = make_step_model("llama-3.1-70b", "h100", "fp8", tensor_parallel_size=4)
    batch = prefill_batch(1, 8192)
    linear_bf16 = bf16.breakdown(batch).part("linear")
    linear_fp8 = fp8.breakdown(batch).part("linear")
    assert linear_bf16.bound is linear_fp8.bound is Bound.COMPUTE
    assert linear_bf16.time_s / linear_fp8.time_s == pytest.approx(2.0, rel=0.01)


def test_a_call_is_cheap(llama8b):
    batches = [decode_batch(b, 1000 * b) for b in range(1, 257)]
    mixed = BatchShape((ChunkShape(512, 0), ChunkShape(256, 1024)), 200, 200_000)
    start = time.perf_counter()
    for _ in range(40):
        for batch in batches:
            llama8b(batch)
        llama8b(mixed)
    per_call_s = (time.perf_counter() - start) / (40 * 257)
    assert per_call_s < 50e-6


def test_measure_is_the_breakdowns_time_flops_and_bytes() -> None:
    rng = random.Random(5)
    for model, tp in (("llama-3.1-8b", 1), ("mixtral-8x7b", 2), ("llama-3.1-70b", 4)):
        step = make_step_model(model, tensor_parallel_size=tp)
        for _ in range(50):
            batch = random_batch(rng)
            time_s, flops, memory = step.measure(batch)
            b = step.breakdown(batch)
            assert time_s == step(batch) == pytest.approx(b.time_s, rel=1e-12, abs=0.0)
            assert flops == pytest.approx(b.flops, rel=1e-12, abs=0.0)
            assert memory == pytest.approx(b.hbm_bytes, rel=1e-12, abs=0.0)


def test_measure_counts_the_linear_flops_by_hand() -> None:
    """A decode step of 4 sequences on Llama 3.1 8B, TP 1: the linear layers do
    2 x (dense parameters) FLOPs per token, the LM head 2 x vocab x hidden per sampled row."""
    step = make_step_model("llama-3.1-8b")
    m = step.deployment.model
    _, flops, _ = step.measure(decode_batch(4, 4 * 100))
    attention = step.breakdown(decode_batch(4, 4 * 100)).part("decode_attention").flops
    linear = 4 * 2 * m.dense_linear_params
    lm_head = 4 * 2 * m.vocab_size * m.hidden_size
    assert flops - attention == pytest.approx(linear + lm_head, rel=1e-9)
