import pytest

from llmsizer.perf.speculative import SpeculativeDecoding, draft_head_model, speculative_step
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
