"""Replaying a recorded schedule: the timeline recursion, by hand."""

import dataclasses

import numpy as np
import pytest

from llmsizer.calibrate.features import StepFeaturizer, price
from llmsizer.calibrate.replay import ScheduleTrace, StepRecord, replay
from llmsizer.perf.batch_shape import decode_batch, prefill_batch
from llmsizer.perf.efficiency import EfficiencyFactors

EFF = EfficiencyFactors()
SLOW = EfficiencyFactors(gemm_bandwidth_efficiency=0.3, step_overhead_s=0.004)


def two_requests(featurize: StepFeaturizer, gap_s: float, closed_loop: bool) -> StepRecord:
    """r0 arrives at 0, r1 at `gap_s` (closed loop: when r0 finishes); each is a prefill step
    of 512 tokens then one decode step, priced under EFF."""
    batches = [prefill_batch(1, 512), decode_batch(1, 513)] * 2
    aggregates = np.array([featurize.aggregates(b) for b in batches])
    dt = price(featurize.features(aggregates), EFF)
    end0 = np.cumsum(dt[:2])
    second = end0[-1] if closed_loop else gap_s
    end1 = second + np.cumsum(dt[2:])
    start = np.array([0.0, end0[0], second, end1[0]])
    end = np.concatenate([end0, end1])
    return StepRecord(
        aggregates=aggregates,
        start_s=start,
        end_s=end,
        arrival_s=np.array([0.0, second]),
        scheduled_s=np.array([0.0, second]),
        first_token_s=end[[0, 2]],
        last_token_s=end[[1, 3]],
        num_output_tokens=np.array([2, 2]),
        closed_loop=closed_loop,
    )


@pytest.mark.parametrize("eff", [EFF, SLOW])
@pytest.mark.parametrize("closed_loop", [False, True])
def test_replay_follows_the_timeline(llama8b, eff, closed_loop):
    featurize = StepFeaturizer(llama8b.deployment)
    run = two_requests(featurize, gap_s=10.0, closed_loop=closed_loop)
    trace = ScheduleTrace.from_record(run, featurize, latencies=True)
    got = replay(trace, eff)
    prefill, decode = (float(price(featurize(b), eff)) for b in run_batches())
    # open loop: r1 waits for its arrival at 10 s; closed loop: it arrives as r0 finishes
    start1 = prefill + decode if closed_loop else 10.0
    assert got["mean_ttft_ms"] == pytest.approx(1e3 * prefill)
    assert got["mean_tpot_ms"] == pytest.approx(1e3 * decode)
    assert got["duration_s"] == pytest.approx(start1 + prefill + decode)
    assert got["output_throughput"] == pytest.approx(4 / got["duration_s"])


def run_batches():
    return prefill_batch(1, 512), decode_batch(1, 513)


def test_a_trace_without_latencies_gives_throughput_only(llama8b):
    featurize = StepFeaturizer(llama8b.deployment)
    run = two_requests(featurize, gap_s=0.0, closed_loop=True)
    trace = ScheduleTrace.from_record(run, featurize, latencies=False, throughput_scale=2)
    got = replay(trace, EFF)
    assert "mean_ttft_ms" not in got
    assert trace.num_rows == 2  # one segment, two step shapes
    assert got["output_throughput"] == pytest.approx(2 * 4 / run.end_s[-1])


def test_inconsistent_records_are_rejected(llama8b):
    featurize = StepFeaturizer(llama8b.deployment)
    run = two_requests(featurize, gap_s=10.0, closed_loop=False)
    bad = dataclasses.replace(run, first_token_s=run.first_token_s + 1e-3)
    with pytest.raises(ValueError, match="matches no step"):
        ScheduleTrace.from_record(bad, featurize, latencies=True)


@pytest.mark.parametrize("builds", [1, 2])
def test_a_one_off_build_delays_the_first_wave_alone(llama8b, builds):
    """A cold server's build before the first wave's first tokens (`first_use_builds`):
    r0 (the first wave of a closed loop of one client) waits B x S, r1 arrives after it and
    does not, so the mean TTFT over the two grows by B x S / 2 (S / k with k = 2 prompts
    per client), TPOT not at all, the run by B x S."""
    featurize = StepFeaturizer(llama8b.deployment)
    trace = ScheduleTrace.from_record(two_requests(featurize, 0.0, True), featurize, latencies=True)
    cold = dataclasses.replace(trace, first_use_builds=builds)
    build = EFF.replace(first_use_build_s=30.0)
    warm, got = replay(trace, build), replay(cold, build)
    assert got["mean_ttft_ms"] - warm["mean_ttft_ms"] == pytest.approx(builds * 30e3 / 2)
    assert got["mean_tpot_ms"] == pytest.approx(warm["mean_tpot_ms"])
    assert got["duration_s"] - warm["duration_s"] == pytest.approx(builds * 30.0)
    assert replay(cold, EFF) == replay(trace, EFF)  # no build time: nothing added


@pytest.mark.parametrize("closed_loop", [False, True])
def test_step_times_given_by_the_caller_replace_the_priced_ones(llama8b, closed_loop):
    """`replay(trace, eff, row_s)` times the steps at `row_s` (a what-if of another step
    formula, `bench/aic_host.py`): the priced rows give `replay(trace, eff)` exactly, and a
    decode step held to a floor lengthens TPOT to it, TTFT unchanged."""
    featurize = StepFeaturizer(llama8b.deployment)
    run = two_requests(featurize, gap_s=10.0, closed_loop=closed_loop)
    trace = ScheduleTrace.from_record(run, featurize, latencies=True)
    priced = price(trace.features, EFF)
    assert replay(trace, EFF, priced) == replay(trace, EFF)
    prefill, decode = (float(price(featurize(b), EFF)) for b in run_batches())
    floor_s = 3 * decode
    got = replay(trace, EFF, np.maximum(priced, np.where(priced < prefill, floor_s, 0.0)))
    assert got["mean_ttft_ms"] == pytest.approx(1e3 * prefill)
    assert got["mean_tpot_ms"] == pytest.approx(1e3 * floor_s)
