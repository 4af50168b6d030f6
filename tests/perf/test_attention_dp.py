"""Attention data parallelism: D ranks run attention and the dense layers on their own
requests (the busiest rank sets the step), the experts see every rank's tokens."""

from __future__ import annotations

import pytest

from llmsizer.instance import DeploymentSpec, make_instance
from llmsizer.perf.batch_shape import (
    BatchShape,
    ChunkShape,
    aggregate,
    busiest_rank,
    decode_batch,
    prefill_batch,
)
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.memory import weight_bytes_per_gpu
from llmsizer.perf.step import StepModel, StepTerms, step_terms
from llmsizer.specs.dtypes import Precision


def deepseek(tp: int, dp: int = 1, ep: int = 1) -> Deployment:
    return Deployment.from_names(
        "deepseek-r1", "b200", "fp4", kv_cache_dtype="fp8", tensor_parallel_size=tp,
        attention_dp_size=dp, expert_parallel_size=ep,
    )  # fmt: skip


def terms(model: StepModel, batch: BatchShape) -> StepTerms:
    c = model.constants
    return StepTerms._make(step_terms(c, aggregate(batch, c.window)))


BATCHES = [
    decode_batch(64, 1500),
    prefill_batch(8, 1024),
    BatchShape((ChunkShape(512, 0),) * 4, num_decode_seqs=96, num_decode_context_tokens=96 * 900),
]


@pytest.mark.parametrize("batch", BATCHES, ids=["decode", "prefill", "mixed"])
def test_dp_one_is_the_deployment_without_it_bit_for_bit(batch: BatchShape) -> None:
    plain = Deployment.from_names("deepseek-r1", "b200", "fp4", tensor_parallel_size=8)
    one = Deployment.from_names(
        "deepseek-r1", "b200", "fp4", tensor_parallel_size=8, attention_dp_size=1
    )
    assert StepModel(one).constants == StepModel(plain).constants
    assert StepModel(one)(batch) == StepModel(plain)(batch)
    assert weight_bytes_per_gpu(one) == weight_bytes_per_gpu(plain)


@pytest.mark.parametrize(("tp", "dp"), [(1, 8), (2, 4)])
def test_a_rank_runs_attention_and_dense_layers_as_a_deployment_of_its_share(
    tp: int, dp: int
) -> None:
    """A decode step of B sequences over D ranks costs the attention, dense-layer and output
    projection time of a D = 1 deployment of the rank's layout at B / D."""
    ranks = terms(StepModel(deepseek(tp, dp, ep=tp * dp)), decode_batch(64, 1500))
    alone = terms(StepModel(deepseek(tp)), decode_batch(64 // dp, 1500))
    for name in ("decode_attention", "linear", "lm_head"):
        for kind in ("compute", "memory"):
            got = getattr(ranks, f"{name}_{kind}_s")
            assert got == pytest.approx(getattr(alone, f"{name}_{kind}_s"), rel=1e-12)


def test_prompt_work_is_the_busiest_ranks_whole_prompts() -> None:
    """9 prompts over 8 ranks: one rank computes two of them."""
    ranks = terms(StepModel(deepseek(1, 8, ep=8)), prefill_batch(9, 1024))
    alone = terms(StepModel(deepseek(1)), prefill_batch(2, 1024))
    assert ranks.prefill_attention_compute_s == pytest.approx(alone.prefill_attention_compute_s)
    assert ranks.linear_compute_s == pytest.approx(alone.linear_compute_s)


def test_the_experts_see_every_ranks_tokens_as_expert_parallel_over_all_gpus() -> None:
    """MoE over tp x D GPUs: the experts' time is that of TP 8 EP 8 at the whole batch."""
    batch = decode_batch(256, 1000)
    ranks = terms(StepModel(deepseek(1, 8, ep=8)), batch)
    tp8 = terms(StepModel(deepseek(8, ep=8)), batch)
    assert ranks.experts_compute_s == pytest.approx(tp8.experts_compute_s, rel=1e-12)
    assert ranks.experts_memory_s == pytest.approx(tp8.experts_memory_s, rel=1e-12)


def test_one_gather_and_scatter_a_layer_moves_an_all_reduces_bytes() -> None:
    """TP 1 x D 8: one all-gather + reduce-scatter of all T tokens per layer over 8 GPUs (an
    all-reduce's traffic), against TP 8's two all-reduces of T tokens per layer."""
    batch = decode_batch(256, 1000)
    ranks, tp8 = StepModel(deepseek(1, 8, ep=8)), StepModel(deepseek(8, ep=8))
    comm = ranks.breakdown(batch).part("allreduce").time_s
    assert comm == pytest.approx(tp8.breakdown(batch).part("allreduce").time_s / 2, rel=1e-12)


def test_the_busiest_rank_has_the_ceiling_share() -> None:
    a = aggregate(BATCHES[2], 0)  # 4 prompts of 512 and 96 decoding sequences
    rank = busiest_rank(a, 8)
    assert rank[0] == 512 + 12 and rank[1] == 1 + 12 and rank[7] == 12
    assert rank[8] == pytest.approx(12 * 900)


@pytest.mark.parametrize("batch", BATCHES, ids=["decode", "prefill", "mixed"])
def test_roofline_bounds_hold_per_gpu(batch: BatchShape) -> None:
    d = deepseek(2, 4, ep=8)
    b = StepModel(d).breakdown(batch)
    assert b.time_s >= b.hbm_bytes / d.gpu.hbm_bytes_per_s
    assert b.time_s >= b.flops / d.gpu.dense_flops_per_s(Precision.FP4)


def test_weights_per_gpu_grow_by_the_replicated_attention_weights() -> None:
    m = deepseek(8).model
    tp8, ranks = weight_bytes_per_gpu(deepseek(8, ep=8)), weight_bytes_per_gpu(deepseek(1, 8, 8))
    fp4 = Precision.FP4.bytes_per_element
    replicated = m.dense_linear_params * fp4 + 2 * m.vocab_size * m.hidden_size * 2  # + ends
    assert ranks - tp8 == pytest.approx(replicated * (1 - 1 / 8), rel=1e-9)


def test_the_kv_cache_holds_each_ranks_requests() -> None:
    """The instance's blocks, sequences and token budget are D times one rank's."""
    spec = DeploymentSpec(
        model="deepseek-r1", gpu="b200", precision="fp4", kv_cache_dtype="fp8", tp=1, dp=8,
        ep=8, engine="trtllm", max_num_seqs=32,
    )  # fmt: skip
    inst = make_instance(spec)
    assert inst.engine.num_gpu_blocks == 8 * inst.memory.num_kv_blocks
    assert inst.engine.max_num_seqs == 8 * 32
    assert inst.engine.max_num_batched_tokens == 8 * spec.engine.max_num_batched_tokens
