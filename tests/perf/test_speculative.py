import pytest

from llmsizer.perf.batch_shape import BatchShape, ChunkShape
from llmsizer.perf.cuda_graphs import CudaGraphs
from llmsizer.perf.efficiency import EfficiencyFactors
from llmsizer.perf.speculative import (
    SpeculativeDecoding,
    SpeculativeStepCost,
    draft_head_model,
    mtp_head_model,
    speculative_step,
)
from llmsizer.perf.step import StepModel
from llmsizer.perf.terms import PREFILL_LAYERS
from tests.perf.conftest import make_step_model


@pytest.mark.parametrize(
    ("k", "a", "expected"),
    [(4, 0.0, 1.0), (4, 1.0, 5.0), (4, 0.7, (1 - 0.7**5) / 0.3), (1, 0.5, 1.5)],
)
def test_expected_tokens_per_step(k, a, expected):
    assert SpeculativeDecoding(k, a).expected_tokens_per_step == pytest.approx(expected)


def test_invalid_settings():
    with pytest.raises(ValueError, match="acceptance_rate"):
        SpeculativeDecoding(4, 1.2)
    with pytest.raises(ValueError, match="num_speculative_tokens"):
        SpeculativeDecoding(0, 0.5)


def test_gain_shrinks_and_reverses_as_batch_grows():
    target = make_step_model("llama-3.1-70b", "h100", tensor_parallel_size=4)
    draft = make_step_model("llama-3.1-8b", "h100", tensor_parallel_size=4)
    spec = SpeculativeDecoding(num_speculative_tokens=4, acceptance_rate=0.7)
    speedups = [speculative_step(target, spec, draft, b, 1000).speedup for b in (1, 16, 64, 256)]
    assert speedups[0] > 1.3  # idle compute at batch 1 makes drafts nearly free
    assert speedups == sorted(speedups, reverse=True)
    assert speedups[-1] < 1.0  # compute-bound: verifying 5 tokens costs ~5 decode steps


def test_eagle_and_medusa_heads_are_cheaper_drafters():
    target = make_step_model("llama-3.1-70b", "h100", tensor_parallel_size=4)
    head = draft_head_model(target)
    assert head.deployment.model.num_layers == 1
    eagle = speculative_step(target, SpeculativeDecoding(4, 0.7), head, 1, 1000)
    medusa = speculative_step(
        target, SpeculativeDecoding(4, 0.7, num_draft_passes=1), head, 1, 1000
    )
    assert medusa.draft_time_s < eagle.draft_time_s < 0.2 * eagle.verify_time_s
    assert eagle.speedup > 2.0
    assert eagle.time_per_token_s == pytest.approx(
        eagle.step_time_s / eagle.expected_tokens_per_seq
    )


def test_an_mtp_head_is_one_layer_with_its_experts_and_no_step_overhead():
    eager = EfficiencyFactors(prefill_layer_overhead_s=20e-6)
    target = make_step_model("deepseek-r1", "b200", "fp8", eager, tensor_parallel_size=8)
    head = mtp_head_model(target)
    model = head.deployment.model
    assert model.num_layers == 1 and model.moe is not None and model.moe.num_moe_layers == 1
    # the head's passes run inside the target's step: its scheduling is paid once
    assert head.efficiency.step_overhead_s == 0 < target.efficiency.step_overhead_s
    # a dense target's MTP head is one dense layer, as the EAGLE head
    dense = make_step_model("llama-3.1-8b")
    assert mtp_head_model(dense).deployment.model.moe is None
    assert mtp_head_model(dense).deployment.model.num_layers == 1


def test_a_verify_step_replays_a_graph_unless_a_decode_step_would_run_eager():
    # 32 layers x 20 us of eager launches: paid by a prompt step, not by a graphed verify
    factors = EfficiencyFactors(prefill_layer_overhead_s=20e-6)
    graphs = CudaGraphs((1, 2, 4, 8))
    target = make_step_model("llama-3.1-8b", efficiency=factors)
    target = StepModel(target.deployment, factors, graphs)
    mtp = SpeculativeDecoding(3, 0.7, graphed_verify=True)
    cost = SpeculativeStepCost(target, mtp_head_model(target), mtp)
    c = target.constants
    eager_s = c.prefill_layers_overhead_s
    assert eager_s == pytest.approx(32 * 20e-6)
    for n, launched in ((4, 0.0), (8, 0.0), (9, eager_s)):  # 9 sequences: past the graphs
        terms = cost._verify_terms(BatchShape(num_decode_seqs=n, num_decode_context_tokens=n))
        assert terms[PREFILL_LAYERS] == launched
    prompt = BatchShape(prefill_chunks=(ChunkShape(16, 0),), num_decode_seqs=4)
    assert cost._verify_terms(prompt)[PREFILL_LAYERS] == eager_s  # real prompt work: eager
    # the decode-step path prices the same verify step to the bit
    batch = BatchShape(num_decode_seqs=4, num_decode_context_tokens=4000)
    assert cost.decode_step_s(4, 4000) == cost(batch)
    # without the flag (the lever table's EAGLE heads, issue 11) the verify stays eager
    eagle = SpeculativeStepCost(target, draft_head_model(target), SpeculativeDecoding(3, 0.7))
    assert eagle._verify_terms(batch)[PREFILL_LAYERS] == eager_s


def test_a_hybrid_models_mtp_head_is_one_full_attention_layer():
    # Qwen3.5: 45 of 60 layers Gated DeltaNet; its MTP layer is full attention (vLLM
    # qwen3_next_mtp.py): a one-layer copy with the linear layers kept could not exist
    target = make_step_model("qwen3.5-397b-a17b", "b200", "fp8", tensor_parallel_size=4)
    model = mtp_head_model(target).deployment.model
    assert model.num_layers == model.num_kv_cache_layers == 1
    assert model.linear_attention is None and model.moe is not None
