"""A speculating engine's recorded schedule re-prices as `predict` simulates it
(`llmsizer.calibrate.spec_features`, `record.record_trace`): the agg rows an MTP sweep ran
(`aic_launch.agg_mtp_speculation`) are fitted like the others."""

from __future__ import annotations

import pytest

from llmsizer.calibrate.features import price
from llmsizer.calibrate.record import record_trace
from llmsizer.calibrate.replay import replay
from llmsizer.calibrate.spec_features import SpeculativeFeaturizer
from llmsizer.instance import PredictSpec, predict, simulation_setup
from llmsizer.instance.speculation import speculative_cost
from llmsizer.perf.batch_shape import BatchShape, ChunkShape
from llmsizer.perf.efficiency import EfficiencyFactors

MTP = {"num_speculative_tokens": 3, "method": "mtp", "acceptance_rate": 0.68}
SPEC = PredictSpec(
    model="deepseek-r1", gpu="b200", tp=8, isl=512, osl=48, concurrency=8, num_requests=24,
    engine="trtllm", precision="fp8", speculative=MTP,
)  # fmt: skip
OTHER = EfficiencyFactors(
    gemm_compute_efficiency=0.4,
    attention_bandwidth_efficiency=0.5,
    step_overhead_s=0.003,
    # a dense layer's eager launch: DeepSeek-R1's eager step pays 135 of them for its 61
    # layers (`perf.launches`), 12 ms as at 2e-4 a layer before
    prefill_layer_overhead_s=9e-5,
)
HELD = OTHER.replace(first_token_delay_s=0.05)
BATCHES = {
    "decode": BatchShape(num_decode_seqs=8, num_decode_context_tokens=8 * 700),
    "prompt": BatchShape(prefill_chunks=(ChunkShape(512, 0), ChunkShape(300, 0))),
    "mixed": BatchShape(
        prefill_chunks=(ChunkShape(512, 0),), num_decode_seqs=5, num_decode_context_tokens=3000
    ),
}


@pytest.mark.parametrize("kind", sorted(BATCHES))
@pytest.mark.parametrize("eff", [EfficiencyFactors(), OTHER], ids=["default", "other"])
def test_the_parts_rows_price_to_the_speculating_step(kind: str, eff: EfficiencyFactors) -> None:
    step = simulation_setup(SPEC, eff).instance.step
    cost = speculative_cost(SPEC.speculative, step)  # type: ignore[arg-type]
    featurizer = SpeculativeFeaturizer.of(cost)
    rows = featurizer(BATCHES[kind])
    assert rows.shape[0] == featurizer.parts == 2 + 3
    assert price(rows, eff).sum() == pytest.approx(cost(BATCHES[kind]), rel=1e-12)


def test_a_decode_step_pays_its_drafter_passes_and_no_step_overhead_for_them() -> None:
    step = simulation_setup(SPEC, OTHER).instance.step
    cost = speculative_cost(SPEC.speculative, step)  # type: ignore[arg-type]
    rows = SpeculativeFeaturizer.of(cost)(BATCHES["decode"])
    draft_s = price(rows[1:4], OTHER)
    assert (draft_s > 0).all()  # three passes, each reading n more keys than the last
    assert draft_s[0] <= draft_s[1] <= draft_s[2]
    assert price(rows[4], OTHER) == 0.0  # no prompt tokens: no prompt pass
    bare = price(rows, OTHER.replace(step_overhead_s=0.0)).sum()
    assert price(rows, OTHER).sum() - bare == pytest.approx(0.003, rel=1e-9)  # once


def test_replay_equals_predict_for_a_speculating_closed_loop() -> None:
    trace = record_trace(SPEC, EfficiencyFactors())
    for eff in (EfficiencyFactors(), OTHER, HELD):
        expected = predict(SPEC, eff).summary
        got = replay(trace, eff)
        for key in ("output_throughput", "mean_ttft_ms", "mean_tpot_ms"):
            assert got[key] == pytest.approx(expected[key], rel=1e-9), key


def test_speculation_shortens_the_recorded_decode() -> None:
    """Theory: a verify step costs at least a decode step (it reads the same weights and
    scores k + 1 tokens a sequence, plus the drafter's passes) and yields at most k + 1
    tokens, (1 - a^(k+1)) / (1 - a) = 2.07 on average at a = 0.68, k = 3 (Leviathan et al.,
    eq. 1): at small batch, where the extra tokens are nearly free, the replayed TPOT falls
    under the plain engine's, and never below 1 / (k + 1) of it."""
    plain = replay(record_trace(SPEC.model_copy(update={"speculative": None})), OTHER)
    speculating = replay(record_trace(SPEC), OTHER)
    ratio = speculating["mean_tpot_ms"] / plain["mean_tpot_ms"]
    assert 1 / 4 < ratio < 0.9
