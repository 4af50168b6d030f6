"""A speculating engine's decode-only steps priced without a batch (`SpeculativeStepCost.
decode_step_s`) and many at once (`decode_run_s`, the engine's quiet runs) cost what the
general path says, pass by pass (the drafter's k decode passes one by one, the verification
through `aggregate` and `step_terms`), to the bit: committed plans hold full-precision
results."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from llmsizer.perf.batch_shape import BatchLike, BatchShape, ChunkShape, aggregate, decode_batch
from llmsizer.perf.cuda_graphs import CudaGraphs
from llmsizer.perf.deployment import Deployment
from llmsizer.perf.speculative import (
    SpeculativeDecoding,
    SpeculativeStepCost,
    draft_head_model,
    mtp_head_model,
    speculative_step,
    verify_aggregates,
)
from llmsizer.perf.step import StepModel, step_terms, step_time_s
from llmsizer.perf.verify_step import graphed_verify_terms, verify_sequence_s, with_verify_state
from llmsizer.sim import Batch, PrefillChunk
from tests.perf.test_step_golden import DEPLOYMENTS, FACTORS, step_model


def head_cost(target: StepModel, k: int, passes: int | None = None) -> SpeculativeStepCost:
    return SpeculativeStepCost(
        target, draft_head_model(target), SpeculativeDecoding(k, 0.7, passes)
    )


def attention_dp_cost(k: int) -> SpeculativeStepCost:
    """DeepSeek R1 with attention data parallelism over 8 ranks; its drafter, a dense head,
    on the same 8 GPUs without it (`draft_head_model` keeps the target's layout, which a
    dense model cannot have)."""
    deployment = Deployment.from_names(
        "deepseek-r1", "b200", "fp4", kv_cache_dtype="fp8", tensor_parallel_size=8,
        attention_dp_size=8, expert_parallel_size=8,
    )  # fmt: skip
    target = StepModel(deployment, FACTORS)
    head = dataclasses.replace(
        deployment,
        model=draft_head_model(step_model("dense")).deployment.model,
        attention_dp_size=1,
        expert_parallel_size=1,
    )
    return SpeculativeStepCost(target, StepModel(head, FACTORS), SpeculativeDecoding(k, 0.7))


def mtp_cost(k: int, verify_sequence_s: float = 0.0) -> SpeculativeStepCost:
    """DeepSeek R1 at TP8 EP8 with CUDA graphs up to 8 sequences and eager launches, its own
    MTP head, verify steps replayed from graphs (`graphed_verify`, issue 10), each verify
    step's decoding sequence costing `verify_sequence_s` more (spec14)."""
    deployment = Deployment.from_names(
        "deepseek-r1", "b200", "fp4", kv_cache_dtype="fp8", tensor_parallel_size=8,
        expert_parallel_size=8,
    )  # fmt: skip
    eager = dataclasses.replace(
        FACTORS, prefill_layer_overhead_s=20e-6, verify_sequence_overhead_s=verify_sequence_s
    )
    target = StepModel(deployment, eager, CudaGraphs((1, 2, 4, 8)))
    spec = SpeculativeDecoding(k, 0.7, graphed_verify=True, serial_host=verify_sequence_s > 0)
    return SpeculativeStepCost(target, mtp_head_model(target), spec)


def hybrid_mtp_cost(k: int) -> SpeculativeStepCost:
    """Qwen3.5 (Gated DeltaNet and full attention) at TP4 with its own MTP head, its verify
    steps moving each sequence's linear-attention state (`verify_step.verify_state_s`),
    their host work serial with the GPU (spec14)."""
    deployment = Deployment.from_names("qwen3.5-397b-a17b", "b200", "fp8", tensor_parallel_size=4)
    eff = dataclasses.replace(FACTORS, verify_sequence_overhead_s=90e-6)
    target = StepModel(deployment, eff, CudaGraphs((1, 2, 4, 8, 16, 32)))
    spec = SpeculativeDecoding(k, 0.7, graphed_verify=True, serial_host=True)
    return SpeculativeStepCost(target, mtp_head_model(target), spec)


def draft_model_cost(k: int) -> SpeculativeStepCost:
    """Llama 3.1 70B at TP2 drafted by Llama 3.1 8B on the same GPUs."""
    target = step_model("tp2-pp4")
    deployment = Deployment.from_names("llama-3.1-8b", "h100-sxm", tensor_parallel_size=2)
    return SpeculativeStepCost(target, StepModel(deployment, FACTORS), SpeculativeDecoding(k, 0.6))


COSTS = {
    **{f"{name}-k3": (lambda name=name: head_cost(step_model(name), 3)) for name in DEPLOYMENTS},
    "dense-k1": lambda: head_cost(step_model("dense"), 1),
    "window-k8": lambda: head_cost(step_model("window"), 8),
    "medusa-k4": lambda: head_cost(step_model("dense"), 4, passes=1),
    "attention-dp-k2": lambda: attention_dp_cost(2),
    "mtp-k3": lambda: mtp_cost(3),
    "mtp-k2-verify-sequences": lambda: mtp_cost(2, 150e-6),
    "hybrid-mtp-k3": lambda: hybrid_mtp_cost(3),
    "draft-model-k5": lambda: draft_model_cost(5),
}


def pass_by_pass(cost: SpeculativeStepCost, batch: BatchLike) -> float:
    """The general path: the verification's aggregates through `step_terms`, and the
    drafter's batches (k decode passes, then its pass over the prompt chunks) priced one
    by one through its call and summed in order."""
    c = cost.target.constants
    own = aggregate(batch, c.window)
    a = verify_aggregates(own, cost.spec.num_speculative_tokens, c.window)
    k = cost.spec.num_speculative_tokens
    terms = with_verify_state(c, step_terms(c, a), batch.num_decode_seqs, k)
    if cost.spec.graphed_verify:
        terms = graphed_verify_terms(c, own, terms, cost.target.cuda_graphs)
    host_s = verify_sequence_s(c, batch.num_decode_seqs) if cost.spec.serial_host else 0.0
    verify = step_time_s(c, terms) + host_s
    return verify + sum(cost.draft(b) for b in cost._draft_batches(batch))


@pytest.mark.parametrize("name", COSTS)
def test_a_decode_step_costs_what_the_batch_costs_to_the_bit(name: str) -> None:
    cost = COSTS[name]()
    rng = np.random.default_rng(3)
    for _ in range(100):
        n = int(rng.integers(1, 400))
        context = int(n * rng.integers(1, 30_000))
        batch = Batch(num_decode_seqs=n, num_decode_context_tokens=context)
        expected = pass_by_pass(cost, batch)
        assert cost(batch) == expected
        assert cost.decode_step_s(n, context) == expected
        assert cost.decode_step_s(n, context) == expected  # the cached verification too
        assert cost(BatchShape(num_decode_seqs=n, num_decode_context_tokens=context)) == expected


@pytest.mark.parametrize("name", COSTS)
def test_a_step_with_prompt_work_costs_what_pass_by_pass_says(name: str) -> None:
    cost = COSTS[name]()
    rng = np.random.default_rng(9)
    for _ in range(30):
        n = int(rng.integers(0, 200))
        chunks = tuple(
            PrefillChunk(int(rng.integers(1, 2048)), int(rng.integers(0, 4096)))
            for _ in range(int(rng.integers(1, 4)))
        )
        batch = Batch(chunks, n, int(n * rng.integers(1, 20_000)))
        assert cost(batch) == pass_by_pass(cost, batch)
        if n:  # after a decode step of the same sequences: its draft passes reused
            cost.decode_step_s(n, batch.num_decode_context_tokens - n)
            assert cost(batch) == pass_by_pass(cost, batch)


@pytest.mark.parametrize("name", COSTS)
def test_the_drafters_prompt_pass_kept_by_its_chunks_costs_the_same(name: str) -> None:
    """The drafter's pass over a step's prompt chunks is kept by the chunks (issue 11):
    steps that repeat a few chunk shapes, in the simulator's chunks and perf's own, cost
    what pass by pass says every time, and a full store starts again."""
    cost = COSTS[name]()
    rng = np.random.default_rng(11)
    shapes = [(int(rng.integers(1, 2048)), int(rng.integers(0, 4096))) for _ in range(3)]
    for i in range(40):
        picked = [shapes[j] for j in rng.integers(0, 3, size=int(rng.integers(1, 3)))]
        n = int(rng.integers(0, 100))
        context = int(n * rng.integers(1, 20_000))
        sim = Batch(tuple(PrefillChunk(*s) for s in picked), n, context)
        perf = BatchShape(tuple(ChunkShape(*s) for s in picked), n, context)
        expected = pass_by_pass(cost, sim)
        assert cost(sim) == expected == cost(perf), i
    assert 0 < len(cost._prompts) <= 2 * (3 + 9)  # each kind of chunk, by its shapes


def test_the_kept_prompt_passes_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("llmsizer.perf.speculative._PROMPT_PASSES", 4)
    cost = head_cost(step_model("dense"), 3)
    for m in range(1, 11):
        batch = Batch((PrefillChunk(m, 0),), 0, 0)
        assert cost(batch) == pass_by_pass(cost, batch)
        assert len(cost._prompts) <= 4


@pytest.mark.parametrize("name", COSTS)
def test_a_run_of_decode_steps_costs_each_step_to_the_bit(name: str) -> None:
    """Step j of a run reads n x j more keys; its k draft passes are the drafter's steps
    j .. j + k - 1 of one run, summed in the order the passes are summed one by one (by
    `decode_run_s` at once, and by `decode_step_s` step after step)."""
    cost = COSTS[name]()
    rng = np.random.default_rng(5)
    for _ in range(10):
        n = int(rng.integers(1, 400))
        context = int(n * rng.integers(1, 30_000))
        num = int(rng.integers(1, 200))
        times = cost.decode_run_s(n, context, num)
        assert times.shape == (num,)
        for j in range(num):
            batch = Batch(num_decode_seqs=n, num_decode_context_tokens=context + n * j)
            assert times[j] == cost(batch), j
            # one by one, in a row: the step before's draft passes are reused
            assert cost.decode_step_s(n, context + n * j) == times[j], j


def test_the_step_is_speculative_steps_drafting_plus_verification() -> None:
    """Against `speculative_step`, which prices the passes one by one through the drafter's
    call and the verification as a batch of prompt chunks (its own sum order: approx)."""
    target = step_model("dense")
    cost = head_cost(target, 4)
    for n, per_seq in ((1, 1000), (16, 1500), (128, 4000)):
        ref = speculative_step(target, cost.spec, cost.draft, n, per_seq)
        assert cost.decode_step_s(n, n * per_seq) == pytest.approx(ref.step_time_s, rel=1e-12)


def test_prompt_work_costs_more() -> None:
    cost = head_cost(step_model("window"), 3)
    mixed = BatchShape((ChunkShape(512, 100),), 31, 31 * 900)
    decode_only = decode_batch(31, 900)
    assert cost(mixed) > cost(decode_only) == cost.decode_step_s(31, 31 * 900)
    assert cost(BatchShape((ChunkShape(512, 100),))) > 0.0
