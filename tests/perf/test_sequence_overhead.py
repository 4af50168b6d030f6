"""The per-sequence step cost (`EfficiencyFactors.sequence_overhead_s`): a fixed time per row
that samples a token in a step, on the busiest attention data-parallel rank; zero by default,
so every calibration file that does not name it prices as before."""

import pytest

from llmsizer.calibrate.aic_fit import FIT, SEQUENCE_PRIOR_S, VERIFY, fit_start
from llmsizer.perf.batch_shape import BatchShape, ChunkShape, aggregate, decode_batch
from llmsizer.perf.calibrated import calibrated_efficiency
from llmsizer.perf.efficiency import EfficiencyFactors
from llmsizer.perf.step import StepTerms, step_terms
from llmsizer.units import US
from tests.perf.conftest import make_step_model

COST = 20 * US
BASE = EfficiencyFactors()


def test_the_default_is_zero_and_changes_no_step():
    step = make_step_model()
    c = step.constants
    for n in (1, 64, 512):
        t = StepTerms._make(step_terms(c, aggregate(decode_batch(n, 1_000), c.window)))
        assert t.sequences_overhead_s == 0.0
    assert BASE.sequence_overhead_s == 0.0


@pytest.mark.parametrize("n", [1, 8, 100, 512])
def test_a_decode_step_pays_it_once_per_sequence(n):
    """Theory: the step time is affine in the per-sequence cost with slope n, on the fast
    decode path and the general one alike."""
    eff = BASE.replace(sequence_overhead_s=COST)
    with_cost = make_step_model("llama-3.1-70b", "h100-sxm", "fp8", eff, tensor_parallel_size=4)
    without = make_step_model("llama-3.1-70b", "h100-sxm", "fp8", BASE, tensor_parallel_size=4)
    batch = decode_batch(n, 2_000 * n)
    assert with_cost(batch) - without(batch) == pytest.approx(n * COST, rel=1e-9)
    c = with_cost.constants
    general = step_terms(c, aggregate(batch, c.window))
    assert StepTerms._make(general).sequences_overhead_s == pytest.approx(n * COST)
    # the breakdown's overhead part holds it, and the parts still sum to the step
    parts = {p.name: p.time_s for p in with_cost.breakdown(batch).parts}
    base_parts = {p.name: p.time_s for p in without.breakdown(batch).parts}
    assert parts["overhead"] - base_parts["overhead"] == pytest.approx(n * COST)
    assert sum(parts.values()) == pytest.approx(with_cost(batch))


def test_a_step_with_prompt_chunks_pays_it_per_row_that_samples():
    """Every prompt chunk and decoding sequence is one logits row (`BatchAggregates`)."""
    step = make_step_model(efficiency=BASE.replace(sequence_overhead_s=COST))
    none = make_step_model()
    mixed = BatchShape(prefill_chunks=(ChunkShape(512), ChunkShape(256, 100)),
                       num_decode_seqs=30, num_decode_context_tokens=30_000)  # fmt: skip
    assert step(mixed) - none(mixed) == pytest.approx(32 * COST, rel=1e-9)


def test_with_attention_data_parallelism_the_busiest_rank_pays_it():
    """Each attention data-parallel rank runs its own scheduler and sampler over its own
    requests (vLLM's engine core per DP rank, SGLang's scheduler per DP rank): the step
    waits for the rank with ceil(n / dp) of them."""
    eff = BASE.replace(sequence_overhead_s=COST)
    kw = {"tensor_parallel_size": 8, "attention_dp_size": 8, "expert_parallel_size": 8}
    step = make_step_model("deepseek-r1", "b200", "fp8", eff, **kw)
    none = make_step_model("deepseek-r1", "b200", "fp8", BASE, **kw)
    for n, busiest in ((8, 1), (64, 8), (65, 9)):
        batch = decode_batch(n, 1_000 * n)
        assert step(batch) - none(batch) == pytest.approx(busiest * COST, rel=1e-9)


def test_the_step_time_is_monotone_in_the_batch():
    step = make_step_model("minimax-m2.5", "b200", "fp8", BASE.replace(sequence_overhead_s=COST),
                           tensor_parallel_size=2)  # fmt: skip
    times = [step(decode_batch(n, 1_500 * n)) for n in (1, 4, 16, 64, 256, 512, 1024)]
    assert times == sorted(times)


def test_the_aic_fit_starts_it_at_its_prior_where_the_general_fit_has_none():
    for engine in ("vllm", "sglang", "trtllm"):
        general = calibrated_efficiency(engine)
        start = fit_start(engine, [f for f in FIT if f != VERIFY])  # spec14's: its own test
        expected = general.sequence_overhead_s or SEQUENCE_PRIOR_S
        assert start.sequence_overhead_s == expected > 0
        assert start.replace(sequence_overhead_s=general.sequence_overhead_s) == general


def test_its_range_is_checked():
    with pytest.raises(ValueError, match="sequence_overhead_s"):
        EfficiencyFactors(sequence_overhead_s=-1 * US)
    with pytest.raises(ValueError, match="sequence_overhead_s"):
        EfficiencyFactors(sequence_overhead_s=1.0)
