"""A DSA model's prompt attention (GLM-5): dense while every query sees at most the
indexer's top-k keys, SGLang's sparse MLA kernel past it, over the top-k pairs in the
absorbed form with the rank's heads padded to FlashMLA's tile (`perf.constants.
_sparse_prefill`)."""

import numpy as np
import pytest

from llmsizer.perf.batch_shape import BatchShape, ChunkShape, aggregate, decode_batch
from llmsizer.perf.step import StepModel, StepTerms, step_terms, step_time_s
from llmsizer.perf.verify_step import verify_aggregates, verify_step
from llmsizer.specs import get_model
from tests.perf.conftest import make_step_model

GLM = get_model("glm-5")
assert GLM.mla is not None and GLM.sparse_attention is not None
TOPK = GLM.sparse_attention.index_topk  # 2048
LAYERS = GLM.num_layers  # 78, every one with the indexer
# absorbed MLA per head and (query, key) pair: scores on latent + rope, sum over the latent
ABSORBED = 2 * (GLM.mla.kv_lora_rank + GLM.mla.qk_rope_head_dim) + 2 * GLM.mla.kv_lora_rank


def prompt(new: int, context: int = 0) -> BatchShape:
    return BatchShape(prefill_chunks=(ChunkShape(new, context),))


def compute_s(step: StepModel, batch: BatchShape, tiles: bool = True) -> float:
    c = step.constants
    return StepTerms._make(
        step_terms(c, aggregate(batch, c.window), tiles=tiles)
    ).prefill_attention_compute_s


def capped_pairs(new: int, context: int, cap: int) -> int:
    """Pairs a causal chunk's queries see, each at most `cap` keys, summed one by one."""
    return sum(min(p, cap) for p in range(context + 1, context + new + 1))


@pytest.mark.parametrize(("new", "context"), [(8192, 0), (3000, 0), (1024, 4096)])
def test_past_the_topk_the_sparse_kernel_runs_the_top_k_pairs_at_128_heads_on_blackwell(
    new, context
):
    step = make_step_model("glm-5", "b200", "fp8", tensor_parallel_size=8)
    c = step.constants
    heads = GLM.num_attention_heads / 8  # 8 real heads a rank, run as 128
    flops = LAYERS * capped_pairs(new, context, TOPK) * ABSORBED * 128
    assert compute_s(step, prompt(new, context)) == pytest.approx(
        flops / c.attention_flops_per_s, rel=1e-12
    )
    # the work MFU counts is the real heads'
    real = compute_s(step, prompt(new, context), tiles=False)
    assert real == pytest.approx(flops * heads / 128 / c.attention_flops_per_s, rel=1e-12)


@pytest.mark.parametrize(("new", "context"), [(1024, 0), (2048, 0), (1000, 1048)])
def test_within_the_topk_the_prompt_runs_dense_attention_as_before(new, context):
    step = make_step_model("glm-5", "b200", "fp8", tensor_parallel_size=8)
    c = step.constants
    causal = new * context + new * (new + 1) / 2
    dense = LAYERS * causal * GLM.attention_flops_per_key / 8
    assert compute_s(step, prompt(new, context)) == pytest.approx(
        dense / c.attention_flops_per_s, rel=1e-12
    )


def test_one_token_past_the_topk_costs_the_padded_kernel():
    """SGLang's switch (dense MHA while the longest sequence is within the top-k): the
    padding makes the sparse kernel dearer than dense attention over the same prompt."""
    step = make_step_model("glm-5", "b200", "fp8", tensor_parallel_size=8)
    within, past = compute_s(step, prompt(TOPK)), compute_s(step, prompt(TOPK + 1))
    assert past > 10 * within


@pytest.mark.parametrize(
    ("gpu", "tp", "padding"),
    [("b200", 8, 16.0), ("h200", 8, 8.0), ("b200", 1, 2.0), ("h200", 1, 1.0)],
)
def test_the_heads_pad_to_128_on_blackwell_and_64_on_hopper(gpu, tp, padding):
    c = make_step_model("glm-5", gpu, "fp8", tensor_parallel_size=tp).constants
    assert c.sparse_prefill_head_padding == padding
    assert c.sparse_prefill_flops_per_pair == pytest.approx(ABSORBED * GLM.num_attention_heads / tp)


@pytest.mark.parametrize("model", ["deepseek-v3", "llama-3.1-8b"])
def test_models_without_an_indexer_keep_dense_prompt_attention(model):
    step = make_step_model(model, "b200", "fp8", tensor_parallel_size=8)
    c = step.constants
    assert c.sparse_prefill_flops_per_pair == 0.0 and c.window == 0
    dense = (
        get_model(model).num_layers
        * (8192 * 8193 / 2)
        * get_model(model).attention_flops_per_key
        / 8
    )
    assert compute_s(step, prompt(8192)) == pytest.approx(
        dense / c.attention_flops_per_s, rel=1e-12
    )


@pytest.mark.parametrize("context_per_seq", [500, 4000])
def test_a_verify_step_prices_its_attention_as_the_general_formula(context_per_seq):
    """`VerifyStep` (speculative decoding) keeps `step_terms`' price to the bit, sparse or
    dense, one context at a time or vectorised."""
    c = make_step_model("glm-5", "b200", "fp8", tensor_parallel_size=8).constants
    seqs, k = 4, 2
    v = verify_step(c, seqs, k)
    decoding = aggregate(decode_batch(seqs, context_per_seq), c.window)
    general = step_time_s(c, step_terms(c, verify_aggregates(decoding, k, c.window)))
    assert v.time_s(seqs * context_per_seq) == general
    assert v.times_s(np.array([seqs * context_per_seq]))[0] == general
