"""Exact behaviour of the batching policies under a fixed 10 ms step."""

from __future__ import annotations

import numpy as np
import pytest

from llmsizer.metrics import summarize
from llmsizer.sim import LinearStepCost

from .conftest import make_engine, make_workload

TICK = 0.010


def test_single_request_token_times_are_step_ends() -> None:
    res = make_engine().run(make_workload(100, 5, n=1))
    (r,) = res.records
    np.testing.assert_allclose(r.token_times_s, TICK * np.arange(1, 6))
    assert r.ttft_s == pytest.approx(TICK)
    assert r.tpot_s == pytest.approx(TICK)
    assert r.scheduled_s == 0.0


def test_static_batch_runs_to_its_longest_member_with_padding() -> None:
    w = make_workload(100, [10, 20, 30, 40, 5], arrival_s=[0, 0, 0, 0, 0])
    res = make_engine(batching="static", max_num_seqs=4).run(w)
    e2e = [r.e2el_s for r in res.records]
    # first batch: 1 prefill step + 39 decode steps; the 5th request waits for all of it
    assert e2e[:4] == pytest.approx([0.10, 0.20, 0.30, 0.40])
    assert res.records[4].scheduled_s == pytest.approx(0.40)
    assert res.records[4].e2el_s == pytest.approx(0.45)
    first_batch = res.steps.num_padding_seqs[:40]
    assert first_batch.max() == 3  # three finished slots pad until the longest ends
    assert res.steps.num_running[:40].min() == 4


def test_static_waits_for_a_full_batch_but_dynamic_times_out() -> None:
    w = make_workload(10, 2, arrival_s=[0.0, 1.0])
    static = make_engine(batching="static", max_num_seqs=2).run(w)
    assert static.records[0].scheduled_s == pytest.approx(1.0)
    dynamic = make_engine(batching="dynamic", max_num_seqs=2, batch_timeout_ms=100).run(w)
    assert dynamic.records[0].scheduled_s == pytest.approx(0.1)
    assert dynamic.records[1].scheduled_s == pytest.approx(1.0)


def test_continuous_batching_fills_freed_slots_every_step() -> None:
    w = make_workload(10, [2, 10, 3], arrival_s=[0, 0, 0])
    res = make_engine(max_num_seqs=2).run(w)
    r0, r1, r2 = res.records
    assert r0.finish_s == pytest.approx(0.02)
    # r2 joins in the step right after r0 leaves, while r1 keeps decoding
    assert r2.scheduled_s == pytest.approx(0.02)
    assert r2.ttft_s == pytest.approx(0.03)
    assert r1.finish_s == pytest.approx(0.10)


def test_chunked_prefill_splits_a_long_prompt_over_the_budget() -> None:
    w = make_workload(10_000, 2, n=1)
    chunked = make_engine(max_num_batched_tokens=2048, max_num_seqs=8).run(w)
    assert chunked.records[0].ttft_s == pytest.approx(5 * TICK)  # ceil(10000 / 2048) steps
    np.testing.assert_array_equal(chunked.steps.num_prefill_tokens[:5], [2048] * 4 + [1808])
    with pytest.raises(ValueError, match="max_num_batched_tokens=2048 with chunked prefill off"):
        make_engine(max_num_batched_tokens=2048, max_num_seqs=8, enable_chunked_prefill=False).run(
            w
        )


def test_decode_first_keeps_decodes_running_while_prefill_first_pauses_them() -> None:
    cost = LinearStepCost(a_s=0.01, b_s_per_prefill_token=1e-5)
    w = make_workload(1000, 20, arrival_s=[0.0] + [0.05 + 0.01 * i for i in range(5)])
    vllm = make_engine(cost, engine="vllm").run(w)
    sglang = make_engine(cost, engine="sglang").run(w)
    assert not sglang.steps.decoded[sglang.steps.num_prefill_tokens > 0].any()
    assert vllm.steps.decoded[vllm.steps.num_prefill_tokens > 0][1:].all()
    # request 0 decodes while the others arrive: its worst gap is longer under prefill-first
    gap_v = np.diff(vllm.records[0].token_times_s).max()
    gap_s = np.diff(sglang.records[0].token_times_s).max()
    assert gap_s > gap_v


def test_in_flight_beats_static_batching_on_the_notebook_scenario(rng: np.random.Generator) -> None:
    """The course notebook: 100 requests at once, batch of 4, ISL 1000, varied output."""
    w = make_workload(1000, rng.integers(10, 200, 100))
    static = summarize(make_engine(batching="static", max_num_seqs=4).run(w).records)
    inflight = summarize(make_engine(max_num_seqs=4).run(w).records)
    speedup = inflight["request_throughput"] / static["request_throughput"]
    assert speedup > 1.2
    assert inflight["mean_e2el_ms"] < static["mean_e2el_ms"]
