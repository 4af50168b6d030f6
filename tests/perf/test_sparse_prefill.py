"""A DSA model's prompt attention (GLM-5): dense while every query sees at most the
indexer's top-k keys, SGLang's sparse kernel past it: each query reads its own top-k latent
rows and computes on them in MLA's absorbed form, as a decode query does
(`perf.step.prompt_attention`)."""

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


def attention(step: StepModel, batch: BatchShape) -> tuple[float, float]:
    c = step.constants
    t = StepTerms._make(step_terms(c, aggregate(batch, c.window)))
    return t.prefill_attention_compute_s, t.prefill_attention_memory_s


def capped_pairs(new: int, context: int, cap: int) -> int:
    """Keys a causal chunk's queries read, each at most `cap`, counted one query at a time."""
    return sum(min(p, cap) for p in range(context + 1, context + new + 1))


@pytest.mark.parametrize("tp", [4, 8])
@pytest.mark.parametrize(("new", "context"), [(8192, 0), (3000, 0), (1024, 4096)])
def test_past_the_topk_each_query_reads_and_scores_its_top_k_rows(new, context, tp):
    step = make_step_model("glm-5", "b200", "fp8", tensor_parallel_size=tp)
    c = step.constants
    read = LAYERS * capped_pairs(new, context, TOPK)
    flops = read * ABSORBED * GLM.num_attention_heads / tp
    memory = read * c.kv_bytes_per_token_per_layer + new * c.attention_act_bytes_per_token
    compute_s, memory_s = attention(step, prompt(new, context))
    assert compute_s == pytest.approx(flops / c.attention_flops_per_s, rel=1e-12)
    assert memory_s == pytest.approx(memory / c.attention_bytes_per_s, rel=1e-12)


@pytest.mark.parametrize(("new", "context"), [(1024, 0), (2048, 0), (1000, 1048)])
def test_within_the_topk_the_prompt_runs_dense_attention_as_before(new, context):
    step = make_step_model("glm-5", "b200", "fp8", tensor_parallel_size=8)
    c = step.constants
    causal = new * context + new * (new + 1) / 2
    dense = LAYERS * causal * GLM.attention_flops_per_key / 8
    memory = LAYERS * (context + new) * c.kv_bytes_per_token_per_layer
    memory += new * c.attention_act_bytes_per_token
    compute_s, memory_s = attention(step, prompt(new, context))
    assert compute_s == pytest.approx(dense / c.attention_flops_per_s, rel=1e-12)
    assert memory_s == pytest.approx(memory / c.attention_bytes_per_s, rel=1e-12)


def test_an_8k_prompt_past_the_topk_is_bound_by_its_reads_of_the_selected_rows():
    """At 8k tokens the selected rows' reads (a quarter of the causal pairs cut, each row a
    whole latent) outweigh the dense prompt's FLOPs: the step is dearer than dense."""
    step = make_step_model("glm-5", "b200", "fp8", tensor_parallel_size=8)
    compute_s, memory_s = attention(step, prompt(8192))
    assert memory_s > compute_s
    dense = LAYERS * 8192 * 8193 / 2 * GLM.attention_flops_per_key / 8
    assert memory_s > 2 * dense / step.constants.attention_flops_per_s


@pytest.mark.parametrize("model", ["deepseek-v3", "llama-3.1-8b"])
def test_models_without_an_indexer_keep_dense_prompt_attention(model):
    step = make_step_model(model, "b200", "fp8", tensor_parallel_size=8)
    c = step.constants
    assert c.sparse_prefill_flops_per_pair == 0.0 and c.window == 0
    m = get_model(model)
    dense = m.num_layers * (8192 * 8193 / 2) * m.attention_flops_per_key / 8
    compute_s, _ = attention(step, prompt(8192))
    assert compute_s == pytest.approx(dense / c.attention_flops_per_s, rel=1e-12)


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
