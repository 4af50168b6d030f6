"""Scheduling one step ahead on every engine (`overlap_scheduler`): vLLM's async scheduling
and SGLang's overlap loop admit a request as TensorRT-LLM's overlap scheduler does, and
SGLang's receive skipper reads only the requests fetched in time."""

from __future__ import annotations

import pytest

from .conftest import make_engine, make_request, make_scheduler, make_workload, step


def _first_prefill_step(overlap: bool, interval: int) -> int:
    """The step in which `b` starts: `a` prefills in step 0 on an idle engine, `b` arrives
    while step 3 runs (it joins the queue at its end); SGLang's skipper reads before step 1
    (after a prompt step) and then every `interval` decode steps: before 4, 7, 10, ..."""
    s = make_scheduler(
        max_num_seqs=4,
        max_num_batched_tokens=64,
        scheduler_recv_interval=interval,
        overlap_scheduler=overlap,
    )
    a, b = make_request(0, 8, 100), make_request(1, 8, 2, arrival_s=0.035)
    s.add(a, 0.0)
    for i in range(4):
        step(s, i)
    s.add(b, 0.040)
    return next(i for i in range(4, 20) if step(s, i)[0].prefills)


def test_without_a_receive_interval_an_arrival_joins_the_second_step_after_its_own() -> None:
    assert _first_prefill_step(False, 1) == 4
    assert _first_prefill_step(True, 1) == 5


def test_the_skipper_reads_only_what_the_overlap_loop_had_fetched() -> None:
    """Read before step 4 without the overlap (b is in the queue); with it, b reaches the
    scheduler's input only for step 5, after that read: the next read, before step 7, takes
    it (not step 5, as the overlap alone would say, nor 4, as the skipper alone would)."""
    assert _first_prefill_step(False, 3) == 4
    assert _first_prefill_step(True, 3) == 7


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_a_closed_loop_next_request_waits_two_steps_more_on_every_engine(engine: str) -> None:
    """Two clients, every step 10 ms (`FixedTicks`): client 0's first request ends in step 3
    while client 1's runs on; its next request starts in step 4 (TTFT one step) when each step
    is scheduled after the last one ends, in step 6 (three steps) one step ahead; the first
    wave reaches an idle engine and is not delayed."""
    workload = make_workload([8, 8, 8, 8], [3, 40, 3, 40], concurrency=2)
    ttft = {}
    for overlap in (False, True):
        records = make_engine(engine=engine, overlap_scheduler=overlap).run(workload).records
        ttft[overlap] = records.first_token_s() - records.arrival_s
    assert ttft[False][2] == pytest.approx(0.010)
    assert ttft[True][2] == pytest.approx(0.030)
    assert ttft[True][:2] == pytest.approx(ttft[False][:2])
