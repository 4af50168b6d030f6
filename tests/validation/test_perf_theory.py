"""The step model against roofline theory: both limits, batching, tensor parallelism."""

import pytest

from llmsizer.perf.batch_shape import decode_batch, prefill_batch
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.efficiency import EfficiencyFactors
from llmsizer.perf.roofline import Bound, mbu, mfu
from llmsizer.perf.step import StepModel

EFF = EfficiencyFactors()


def step_model(model: str, gpu: str = "h100-sxm", tp: int = 1) -> StepModel:
    return StepModel(Deployment.from_names(model, gpu, tensor_parallel_size=tp), EFF)


def test_batch1_decode_is_weights_over_bandwidth():
    step = step_model("llama-3.1-8b")
    model, gpu = step.deployment.model, step.deployment.gpu
    breakdown = step.breakdown(decode_batch(1, 1000))
    weight_parts = [breakdown.part(name) for name in ("linear", "lm_head")]
    assert all(p.bound is Bound.MEMORY for p in weight_parts)
    # every weight but the embedding table (only one row of it is read) streams once
    streamed = model.weight_bytes(step.deployment.precision) - 2 * model.embedding_params
    expected_s = streamed / (gpu.hbm_bytes_per_s * EFF.gemm_bandwidth_efficiency)
    assert sum(p.time_s for p in weight_parts) == pytest.approx(expected_s, rel=0.01)
    # the rest of the step is fixed cost (host and per-layer kernel overheads) and a little
    # KV and activation traffic
    variable_s = breakdown.time_s - breakdown.part("overhead").time_s
    assert variable_s == pytest.approx(expected_s, rel=0.05)
    assert 0.5 < mbu(breakdown, gpu) < EFF.gemm_bandwidth_efficiency


def test_large_prefill_is_compute_bound():
    step = step_model("llama-3.1-8b")
    breakdown = step.breakdown(prefill_batch(4, 4096))
    assert breakdown.bound is Bound.COMPUTE
    linear = breakdown.part("linear")
    tokens = 4 * 4096
    flops = tokens * step.constants.dense_flops_per_token
    peak = step.deployment.matmul_flops_per_s
    assert linear.time_s == pytest.approx(flops / (peak * EFF.gemm_compute_efficiency))
    assert 0.4 < mfu(breakdown, peak) < EFF.gemm_compute_efficiency


def test_roofline_reaches_both_limits_as_tokens_grow():
    step = step_model("llama-3.1-70b", "h200", tp=4)
    linear = [
        step.breakdown(prefill_batch(1, n)).part("linear").time_s for n in (1, 16, 8192, 16384)
    ]
    assert linear[1] == pytest.approx(linear[0], rel=0.02)  # flat: weights dominate
    assert linear[3] == pytest.approx(2 * linear[2], rel=0.01)  # linear: math dominates


def test_decode_throughput_rises_with_batch_and_saturates():
    step = step_model("llama-3.1-8b")
    batch_sizes = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]
    throughput = [b / step(decode_batch(b, 2000)) for b in batch_sizes]
    assert throughput == sorted(throughput)
    assert throughput[1] / throughput[0] > 1.9  # nearly free while memory-bound on weights
    assert throughput[-1] / throughput[-2] < 1.1  # saturated: KV reads grow with the batch


def test_doubling_tensor_parallelism_does_not_halve_decode_time():
    tp4 = step_model("llama-3.1-70b", tp=4)
    tp8 = step_model("llama-3.1-70b", tp=8)
    batch = decode_batch(1, 1000)
    assert 0.5 * tp4(batch) < tp8(batch) < tp4(batch)
    allreduce4 = tp4.breakdown(batch).part("allreduce").time_s
    allreduce8 = tp8.breakdown(batch).part("allreduce").time_s
    # on NVSwitch every all-reduce is 2 hops whatever n; only the bytes per link grow, from
    # 2 (n - 1) / n = 1.5 to 1.75 of the message
    assert allreduce4 < allreduce8 < 1.1 * allreduce4
    # over PCIe a ring's 2 (n - 1) hops: 14 against 6
    ring4 = step_model("llama-3.1-70b", "l40s", tp=4).breakdown(batch).part("allreduce").time_s
    ring8 = step_model("llama-3.1-70b", "l40s", tp=8).breakdown(batch).part("allreduce").time_s
    assert ring8 > 2 * ring4


def test_moe_decode_is_cheaper_than_its_total_size_suggests():
    mixtral = step_model("mixtral-8x7b", tp=2)
    dense_equal = step_model("llama-2-70b", tp=2)  # similar total bytes, all active
    assert mixtral(decode_batch(1, 1000)) < 0.6 * dense_equal(decode_batch(1, 1000))
