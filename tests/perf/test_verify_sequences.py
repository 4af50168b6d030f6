"""A speculative verify step's cost per decoding sequence (`EfficiencyFactors.
verify_sequence_overhead_s`, spec14, docs/aic_measurement.md section 34): the engine's
per-request host work of a verify step, serial with the GPU without the overlap scheduler
(`SpeculativeDecoding.serial_host`). It grows with the batch, one unit a decoding sequence,
whatever the context; only verify steps pay it (plain steps, a speculating step's prompt
chunks and an engine scheduling one step ahead do not); a recorded schedule re-prices it in
a column of its own, which the AIC fit fits only where its rows pay it."""

from __future__ import annotations

import numpy as np
import pytest

from llmsizer.calibrate.aic_fit import FIT, VERIFY, VERIFY_PRIOR_S, fit_start
from llmsizer.calibrate.features import FEATURES, VERIFY_SEQUENCES, StepFeaturizer, price
from llmsizer.calibrate.spec_features import SpeculativeFeaturizer
from llmsizer.instance import PredictSpec, simulation_setup
from llmsizer.instance.speculation import SpeculativeSpec, speculative_cost
from llmsizer.perf.batch_shape import BatchShape, ChunkShape, decode_batch, prefill_batch
from llmsizer.perf.calibrated import calibrated_efficiency
from llmsizer.perf.efficiency import EfficiencyFactors
from llmsizer.perf.speculative import SpeculativeDecoding, SpeculativeStepCost
from llmsizer.perf.terms import DECODE_MEMORY
from llmsizer.units import US

COST = 200 * US
MTP = {"num_speculative_tokens": 2, "method": "mtp", "acceptance_rate": 0.68}
SPEC = PredictSpec(
    model="deepseek-r1", gpu="b200", tp=8, isl=1024, osl=64, concurrency=256, num_requests=256,
    engine="sglang", precision="fp8", speculative=MTP, overlap_scheduler=False,
)  # fmt: skip
BASE = EfficiencyFactors(step_overhead_s=400 * US, sequence_overhead_s=2 * US)


def cost_at(eff: EfficiencyFactors, overlap: bool = False) -> SpeculativeStepCost:
    step = simulation_setup(SPEC, eff).instance.step
    return speculative_cost(SPEC.speculative, step, overlap)  # type: ignore[arg-type]


@pytest.mark.parametrize("n", [1, 8, 64, 256, 512])
def test_a_verify_step_pays_it_once_per_decoding_sequence(n: int) -> None:
    """Theory: the step's time rises by n x the cost, at any context, one step or a run."""
    bare, paying = cost_at(BASE), cost_at(BASE.replace(verify_sequence_overhead_s=COST))
    for context in (n * 100, n * 1_500, n * 9_000):
        extra = paying.decode_step_s(n, context) - bare.decode_step_s(n, context)
        assert extra == pytest.approx(n * COST, rel=1e-9)
    run = paying.decode_run_s(n, n * 1_000, 5) - bare.decode_run_s(n, n * 1_000, 5)
    assert run == pytest.approx(np.full(5, n * COST), rel=1e-9)


def test_an_engine_scheduling_one_step_ahead_does_not_pay_it() -> None:
    """The overlap scheduler prepares step n + 1 while step n runs (TensorRT-LLM's MTP rows)."""
    eff = BASE.replace(verify_sequence_overhead_s=COST)
    ahead, bare = cost_at(eff, overlap=True), cost_at(BASE, overlap=True)
    for n in (1, 64, 256):
        assert ahead.decode_step_s(n, n * 1_500) == bare.decode_step_s(n, n * 1_500)
    rows = SpeculativeFeaturizer.of(ahead)(decode_batch(64, 1_500))
    assert not rows[:, VERIFY_SEQUENCES].any()


def test_prompt_chunks_do_not_pay_it_and_plain_steps_never_read_it() -> None:
    bare, paying = cost_at(BASE), cost_at(BASE.replace(verify_sequence_overhead_s=COST))
    prompts = BatchShape(prefill_chunks=(ChunkShape(1024, 0), ChunkShape(700, 0)))
    assert paying(prompts) == bare(prompts)
    mixed = BatchShape(prefill_chunks=(ChunkShape(1024, 0),), num_decode_seqs=30,
                       num_decode_context_tokens=30 * 1_200)  # fmt: skip
    assert paying(mixed) - bare(mixed) == pytest.approx(30 * COST, rel=1e-9)
    plain, plain_paying = bare.target, paying.target  # the target's own (plain) steps
    for batch in (decode_batch(256, 1_500), prefill_batch(4, 1024)):
        assert plain_paying(batch) == plain(batch)


def test_its_column_counts_the_verifying_sequences_and_prices_to_the_step() -> None:
    eff = BASE.replace(verify_sequence_overhead_s=COST)
    cost = cost_at(eff)
    featurizer = SpeculativeFeaturizer.of(cost)
    batch = BatchShape(prefill_chunks=(ChunkShape(1024, 0),), num_decode_seqs=30,
                       num_decode_context_tokens=30 * 1_200)  # fmt: skip
    rows = featurizer(batch)
    assert FEATURES[VERIFY_SEQUENCES] == "verify_sequences_overhead_s"
    assert rows[0, VERIFY_SEQUENCES] == 30  # the verify part
    assert not rows[1:, VERIFY_SEQUENCES].any()  # the drafter's passes
    assert price(rows, eff).sum() == pytest.approx(cost(batch), rel=1e-12)
    plain = StepFeaturizer(cost.target.deployment, cost.target.cuda_graphs)
    assert plain(decode_batch(30, 1_200))[VERIFY_SEQUENCES] == 0.0


def test_the_aic_fit_starts_it_at_its_prior_where_the_general_fit_has_none() -> None:
    for engine in ("vllm", "sglang", "trtllm"):
        general = calibrated_efficiency(engine).verify_sequence_overhead_s
        assert fit_start(engine).verify_sequence_overhead_s == (general or VERIFY_PRIOR_S)
        held = fit_start(engine, [f for f in FIT if f != VERIFY])
        assert held.verify_sequence_overhead_s == general


def test_its_range_is_checked() -> None:
    with pytest.raises(ValueError, match="verify_sequence_overhead_s"):
        EfficiencyFactors(verify_sequence_overhead_s=-1 * US)
    with pytest.raises(ValueError, match="verify_sequence_overhead_s"):
        EfficiencyFactors(verify_sequence_overhead_s=0.1)


QWEN = PredictSpec(
    model="qwen3.5-397b-a17b", gpu="b200", tp=4, isl=1024, osl=64, concurrency=64,
    num_requests=64, engine="sglang", precision="fp8", overlap_scheduler=False, max_num_seqs=64,
    speculative={"num_speculative_tokens": 3, "method": "mtp", "acceptance_rate": 0.7},
)  # fmt: skip


def test_a_hybrid_verify_step_moves_k_plus_6_states_a_sequence() -> None:
    """Theory (SGLang's Gated DeltaNet verify): each sequence's state read once, written
    after each of its k + 1 positions, the accepted one gathered into a temporary and
    scattered back (4 more): k + 6 states, at attention bandwidth; a model without linear
    attention moves none."""
    step = simulation_setup(QWEN, BASE).instance.step
    cost = speculative_cost(QWEN.speculative, step, False)  # type: ignore[arg-type]
    c, state = step.constants, step.deployment.linear_state_bytes_per_gpu
    assert state > 0
    for n in (1, 64, 256):
        terms = cost._verify_terms(decode_batch(n, 1_500))
        expected = n * (3 + 6) * state / c.attention_bytes_per_s
        assert terms[DECODE_MEMORY] == pytest.approx(expected, rel=1e-12)
    assert cost_at(BASE)._verify_terms(decode_batch(64, 1_500))[DECODE_MEMORY] == 0.0
    mixed = BatchShape(prefill_chunks=(ChunkShape(1024, 0),), num_decode_seqs=30,
                       num_decode_context_tokens=30 * 1_200)  # fmt: skip
    rows = SpeculativeFeaturizer.of(cost)(mixed)
    assert price(rows, BASE).sum() == pytest.approx(cost(mixed), rel=1e-12)


TRITON_VERIFY = {"num_speculative_tokens": 3, "method": "mtp", "acceptance_rate": 0.7,
                 "linear_verify_kernel": "triton"}  # fmt: skip


def test_a_triton_verify_kernel_moves_its_states_at_its_measured_rate() -> None:
    """Theory (section 54): the verify kernel's k + 2 states at 16 / 30 of attention
    bandwidth (SGLang PR 19150: Triton 30 us a layer, FlashInfer 16), the commit's 4 at it;
    at 256 sequences of Qwen3.5 FP8 TP4 on B200 that is k + 2 = 5 states x 30 / 16 + 4 =
    13.375 states where the default kernel moves 9; the plain and the speculative step, the
    run and the featurised rows all agree."""
    step = simulation_setup(QWEN, BASE).instance.step
    cost = speculative_cost(SpeculativeSpec.model_validate(TRITON_VERIFY), step, False)
    default = speculative_cost(QWEN.speculative, step, False)  # type: ignore[arg-type]
    c, state = step.constants, step.deployment.linear_state_bytes_per_gpu
    for n in (1, 256):
        terms = cost._verify_terms(decode_batch(n, 1_500))
        expected = n * ((3 + 2) * 30 / 16 + 4) * state / c.attention_bytes_per_s
        assert terms[DECODE_MEMORY] == pytest.approx(expected, rel=1e-12)
        extra = cost.decode_step_s(n, 1_500) - default.decode_step_s(n, 1_500)
        assert extra == pytest.approx(n * 5 * (30 / 16 - 1) * state / c.attention_bytes_per_s)
    mixed = BatchShape(prefill_chunks=(ChunkShape(1024, 0),), num_decode_seqs=30,
                       num_decode_context_tokens=30 * 1_200)  # fmt: skip
    rows = SpeculativeFeaturizer.of(cost)(mixed)
    assert price(rows, BASE).sum() == pytest.approx(cost(mixed), rel=1e-12)
    decode = decode_batch(256, 256 * 1_500)
    assert price(SpeculativeFeaturizer.of(cost)(decode), BASE).sum() == pytest.approx(
        cost(decode), rel=1e-12
    )


def test_an_unpriced_verify_kernel_is_refused() -> None:
    with pytest.raises(ValueError, match="linear_verify_kernel 'cuda' has no price; allowed: tri"):
        SpeculativeSpec.model_validate(TRITON_VERIFY | {"linear_verify_kernel": "cuda"})
    with pytest.raises(ValueError, match="state_kernel_rate must be in"):
        SpeculativeDecoding(3, 0.7, state_kernel_rate=0.0)
