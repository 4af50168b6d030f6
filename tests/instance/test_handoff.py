"""A disaggregated decode worker prices a handed-off request's first step as a decode."""

from __future__ import annotations

import numpy as np
import pytest

from llmsizer.instance import DeploymentSpec
from llmsizer.instance.disagg import make_disaggregated
from llmsizer.instance.speculation import SpeculativeSpec
from llmsizer.perf.batch_shape import aggregate
from llmsizer.perf.step import step_terms
from llmsizer.perf.terms import StepTerms
from llmsizer.sim.batch import Batch, PrefillChunk
from llmsizer.workload import fixed_length_load, make_workload

# a TensorRT-LLM DEP8 decode worker as the srt-slurm recipes launch it: 32 requests a rank,
# padded CUDA graphs up to 32 (`calibrate.aic_disagg._trtllm_decode_graphs`)
DEP8_FIELDS = {
    "model": "deepseek-r1",
    "gpu": "gb300",
    "precision": "fp4",
    "kv_cache_dtype": "fp8",
    "engine": "trtllm",
    "tp": 1,
    "attention_dp_size": 8,
    "expert_parallel_size": 8,
    "max_num_seqs": 32,
    "cudagraph_padding": True,
    "max_cudagraph_capture_size": 32,
}
DEP8 = DeploymentSpec.model_validate(DEP8_FIELDS)
MTP3 = SpeculativeSpec(num_speculative_tokens=3, method="mtp", acceptance_rate=0.7)
ISL = 8192
# 200 requests decoding at 8,192 + 300 tokens, 3 handed off at their prompt's end
CONTEXT = 200 * (ISL + 300)
ADMITTING = Batch((PrefillChunk(1, ISL),) * 3, 200, CONTEXT)


def _pools(decode: DeploymentSpec):  # type: ignore[no-untyped-def]
    return make_disaggregated(
        DEP8, decode, num_prefill=1, num_decode=1, link="nvlink", max_model_len=ISL + 1024
    )


def test_a_handed_off_requests_first_step_is_one_more_decoding_sequence() -> None:
    d = _pools(DEP8)
    step = d.decode_instance.step
    # the engines run the prefill's token as a generation step (`instance.handoff`)
    expected = step.decode_step_s(203, CONTEXT + 3 * ISL)
    assert d.decode[0].step_cost(ADMITTING) == expected
    # a graphed decode step: no prompt step's eager launches of every layer, which the same
    # batch priced as prompt work pays (19 ms on a GB300 at the session-16 factors; the graph's
    # padding of 26 requests a rank to 32 is the difference's small part)
    c = step.constants
    terms = StepTerms._make(step_terms(c, aggregate(ADMITTING, c.window), step.cuda_graphs))
    assert terms.prefill_layers_overhead_s > 0.01
    assert step(ADMITTING) - expected > 0.9 * terms.prefill_layers_overhead_s


def test_a_speculating_worker_verifies_the_handed_off_requests_drafts_in_its_graph() -> None:
    d = _pools(DEP8.model_copy(update={"speculative": MTP3}))
    cost = d.decode[0].step_cost
    inner = cost.cost  # the SpeculativeStepCost the adapter wraps
    # TensorRT-LLM's first generation step verifies the context worker's draft tokens
    assert cost(ADMITTING) == inner.decode_step_s(203, CONTEXT + 3 * ISL)
    assert cost(ADMITTING) < inner(ADMITTING)


def test_decode_only_steps_and_recompute_chunks_are_priced_as_before() -> None:
    d = _pools(DEP8)
    cost, step = d.decode[0].step_cost, d.decode_instance.step
    assert cost.decode_step_s(200, CONTEXT) == step.decode_step_s(200, CONTEXT)
    runs = cost.decode_run_s(200, CONTEXT, 4)
    assert list(runs) == list(step.decode_run_s(200, CONTEXT, 4))
    # a preempted request's recompute is prompt work; a handed-off token beside it decodes
    recompute = Batch((PrefillChunk(512, 0), PrefillChunk(1, ISL)), 200, CONTEXT)
    assert cost(recompute) == step(Batch((PrefillChunk(512, 0),), 201, CONTEXT + ISL))
    assert cost(Batch((PrefillChunk(512, 0),), 0, 0)) == step(Batch((PrefillChunk(512, 0),)))


@pytest.mark.parametrize("clients", [24, 48])
def test_a_full_decode_pool_streams_no_slower_than_its_full_decode_step(clients: int) -> None:
    # more clients than the 16 slots: every finish admits a waiting request, so most steps
    # admit one; each is a decode step of at most 16 requests at most 1,024 + 64 tokens long
    # (before: a prompt step with every layer's eager launches, ~4x slower here)
    small = DeploymentSpec.model_validate(
        {**DEP8_FIELDS, "attention_dp_size": 1, "tp": 8, "max_num_seqs": 16,
         "max_cudagraph_capture_size": 16}
    )  # fmt: skip
    d = make_disaggregated(
        small, small, num_prefill=2, num_decode=1, link="nvlink", max_model_len=1024 + 64
    )
    load = make_workload(fixed_length_load(1024, 64, num_requests=4 * clients, concurrency=clients))
    records = d.run(load).records
    gaps = [np.diff(r.token_times_s[1:]).max() for r in records]
    slowest = d.decode_instance.step.decode_step_s(16, 16 * (1024 + 64))
    assert max(gaps) <= slowest * (1 + 1e-9)
