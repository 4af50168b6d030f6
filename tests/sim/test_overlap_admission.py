"""TensorRT-LLM's overlap scheduler as admission sees it (`llmsizer.sim.batching.overlap`):
step n + 1 is decided while step n runs, so a request joins one step later than on an engine
that decides each step after the previous one ends, two when it arrives as a step ends (a
closed loop's next request), and a finished request holds its slot for one step more."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from llmsizer.sim import EngineConfig
from llmsizer.sim.batching.overlap import OverlapAdmission

from .conftest import make_engine, make_request, make_scheduler, make_workload, step


def _admitted_at(overlap: bool, arrival_s: float, now: float) -> int:
    """The step (counted from 1 after `a`'s prompt step) in which `b` starts, `b` joining the
    queue at `now` (the end of `a`'s prompt step) having arrived at `arrival_s`."""
    s = make_scheduler(max_num_seqs=4, max_num_batched_tokens=64, overlap_scheduler=overlap)
    a, b = make_request(0, 8, 100), make_request(1, 8, 2, arrival_s=arrival_s)
    s.add(a, 0.0)
    step(s, 0)
    s.add(b, now)
    return next(i for i in range(1, 6) if step(s, i)[0].prefills)


def test_a_request_arriving_during_a_step_joins_the_second_step_after_it() -> None:
    assert _admitted_at(False, 0.005, 0.010) == 1
    assert _admitted_at(True, 0.005, 0.010) == 2


def test_a_request_arriving_as_a_step_ends_joins_the_third() -> None:
    """A closed loop's next request: sent when the client gets the last token, after the
    executor's next fetch."""
    assert _admitted_at(False, 0.010, 0.010) == 1
    assert _admitted_at(True, 0.010, 0.010) == 3


def test_an_idle_engine_schedules_an_arrival_at_once() -> None:
    s = make_scheduler(max_num_seqs=4, max_num_batched_tokens=64, overlap_scheduler=True)
    b = make_request(1, 8, 2, arrival_s=0.5)
    s.add(b, 0.5)
    assert step(s, 0)[0].prefills == [(b, 8)]


@pytest.mark.parametrize("overlap", [False, True])
def test_a_finished_request_holds_its_slot_one_step_more(overlap: bool) -> None:
    s = make_scheduler(max_num_seqs=2, max_num_batched_tokens=64, overlap_scheduler=overlap)
    a, b, c = make_request(0, 8, 2), make_request(1, 8, 50), make_request(2, 8, 2)
    for r in (a, b, c):
        s.add(r, 0.0)  # c waits for a slot, fetched long before a finishes
    step(s, 0)  # a's and b's prompts and first tokens
    _, done = step(s, 1)  # a's last token; b decodes on
    assert done == [a]
    first = step(s, 2)[0].prefills
    assert first == ([] if overlap else [(c, 8)])
    if overlap:
        assert step(s, 3)[0].prefills == [(c, 8)]


def test_a_closed_loop_next_request_waits_two_steps_more_on_a_busy_engine() -> None:
    """Two clients, every step 10 ms: client 0's first request (3 tokens) ends in step 3
    while client 1's (40 tokens) runs; its next request then starts in step 4 (TTFT one step)
    without the overlap scheduler and in step 6 (three steps) with it."""
    workload = make_workload([8, 8, 8, 8], [3, 40, 3, 40], concurrency=2)
    ttft = {}
    for overlap in (False, True):
        records = make_engine(engine="trtllm", overlap_scheduler=overlap).run(workload).records
        ttft[overlap] = records.first_token_s() - records.arrival_s
    assert ttft[False][2] == pytest.approx(0.010)
    assert ttft[True][2] == pytest.approx(0.030)
    assert ttft[True][:2] == pytest.approx(ttft[False][:2])  # the first wave: an idle engine


def test_off_without_a_preset_and_on_in_every_engine_preset() -> None:
    """Each engine's default (`llmsizer.sim.config`): vLLM's async scheduling since 0.14,
    SGLang's overlap schedule, TensorRT-LLM's overlap scheduler."""
    assert not EngineConfig().overlap_scheduler
    for engine in ("vllm", "sglang", "trtllm"):
        assert EngineConfig(engine=engine).overlap_scheduler
        assert not EngineConfig(engine=engine, overlap_scheduler=False).overlap_scheduler


@pytest.mark.parametrize("closed_loop", [False, True])
def test_the_fetched_requests_found_by_bisection_are_those_a_walk_finds(
    closed_loop: bool, monkeypatch: pytest.MonkeyPatch, rng: np.random.Generator
) -> None:
    """The fetched requests are a prefix of the queue (`OverlapAdmission.num_fetched`): on
    runs with long queues, Poisson arrivals and a closed loop, bisection counts what walking
    the queue to the first request not yet fetched counts."""
    bisected = OverlapAdmission.num_fetched
    checked = []

    def both(self: OverlapAdmission, waiting: Any, num_steps: int, busy: bool) -> int:
        walked = 0
        for r in waiting:
            if busy and self.fetched_after.get(r, 0) > num_steps:
                break
            walked += 1
        count = bisected(self, waiting, num_steps, busy)
        assert count == walked
        checked.append(len(waiting))
        return count

    monkeypatch.setattr(OverlapAdmission, "num_fetched", both)
    n = 400
    isl, osl = rng.integers(4, 40, n), rng.integers(1, 30, n)
    arrivals = None if closed_loop else np.cumsum(rng.exponential(0.004, n))
    workload = make_workload(
        isl.tolist(), osl.tolist(), arrival_s=arrivals, concurrency=64 if closed_loop else None
    )
    make_engine(
        engine="trtllm", max_num_seqs=16, max_num_batched_tokens=96, overlap_scheduler=True
    ).run(workload)
    assert max(checked) > 20  # long queues were counted


def test_an_engine_whose_only_request_retires_takes_the_next_at_once() -> None:
    """One seat, two clients: each request waits for the other to finish; with nothing else in
    flight the retiring request's seat is not counted, so the run never stalls, and every
    request after the first waits exactly the other's service (Little's law: each of the two
    clients is served half the time)."""
    workload = make_workload(8, 4, n=6, concurrency=2)
    result = make_engine(engine="trtllm", max_num_seqs=1, overlap_scheduler=True).run(workload)
    records = result.records
    ttft = records.first_token_s() - records.arrival_s
    assert ttft[0] == pytest.approx(0.010)
    assert ttft[1:] == pytest.approx([0.050] * 5)  # 4 steps of the other, then its own
