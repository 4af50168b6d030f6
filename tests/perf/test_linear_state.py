"""Linear attention's per-sequence state in the decode step: every decoding sequence's
recurrent and convolution state is read and written back once a step in each Gated DeltaNet
layer, whatever its context (Qwen3.5)."""

import pytest

from llmsizer.perf.batch_shape import aggregate, decode_batch
from llmsizer.perf.efficiency import EfficiencyFactors
from llmsizer.perf.step import StepTerms, step_terms
from llmsizer.specs import get_model
from llmsizer.specs.dtypes import Precision
from tests.perf.conftest import make_step_model

QWEN = "qwen3.5-397b-a17b"


@pytest.mark.parametrize("tp", [1, 4, 8])
def test_each_gpu_moves_its_share_of_the_state_twice(tp):
    m = get_model(QWEN)
    la = m.linear_attention
    assert la is not None and la.recurrent_state_bytes_per_element == 4.0  # float32 state
    c = make_step_model(QWEN, "b200", "fp8", tensor_parallel_size=tp).constants
    state = m.linear_state_bytes_per_sequence(Precision.BF16)
    # 45 layers x 64 value heads x 128 x 128 float32 values: ~189 MB, plus the conv taps
    assert state == pytest.approx(192.06e6, rel=1e-3)
    assert c.linear_state_bytes_per_seq == pytest.approx(2 * state / tp)


def test_models_without_linear_attention_move_no_state():
    for model in ("llama-3.1-8b", "deepseek-v3", "minimax-m2.5"):
        assert make_step_model(model, "b200", "fp8").constants.linear_state_bytes_per_seq == 0.0


def test_the_state_adds_a_context_independent_memory_time_per_sequence():
    """Theory: at zero context decode attention's memory time is n (Q/O + state) / B_att,
    linear in n; at any context the state adds the same n * state / B_att."""
    step = make_step_model(QWEN, "b200", "fp8", tensor_parallel_size=4)
    c = step.constants
    for n in (1, 16, 256):
        for context in (0, 1_000, 8_000):
            t = StepTerms._make(step_terms(c, aggregate(decode_batch(n, context), c.window)))
            keys = c.full_layers * n * context
            no_state = keys * c.kv_bytes_per_token_per_layer + n * c.attention_act_bytes_per_token
            extra = t.decode_attention_memory_s - no_state / c.attention_bytes_per_s
            state_s = n * c.linear_state_bytes_per_seq / c.attention_bytes_per_s
            assert extra == pytest.approx(state_s)
    # 256 sequences at TP4 move ~24.6 GB a step: ~4 ms at 0.77 of B200's 8 TB/s
    assert 256 * c.linear_state_bytes_per_seq == pytest.approx(24.6e9, rel=0.01)


def test_the_fast_decode_path_prices_the_state_as_the_general_formula():
    eff = EfficiencyFactors(attention_bandwidth_efficiency=0.5)
    step = make_step_model(QWEN, "b200", "fp8", eff, tensor_parallel_size=4)
    c = step.constants
    for n, context in ((1, 100), (64, 1_500), (300, 9_000)):
        batch = decode_batch(n, context)
        general = sum(p.time_s for p in step.breakdown(batch).parts)
        assert step.decode_step_s(n, n * context) == pytest.approx(general, rel=1e-12)
        a = aggregate(batch, c.window)
        t = StepTerms._make(step_terms(c, a))
        assert step._attention.time_s(n, n * context) == pytest.approx(
            (t.decode_attention_compute_s, t.decode_attention_memory_s), rel=1e-12
        )


def test_a_decode_step_grows_monotonically_with_the_batch():
    step = make_step_model(QWEN, "b200", "fp8", tensor_parallel_size=4)
    times = [step(decode_batch(n, 1_500)) for n in (1, 8, 32, 128, 256, 512)]
    assert times == sorted(times)
