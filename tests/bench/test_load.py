"""The load driver: closed loops keep N in flight, open loops keep their schedule."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from llmsizer.bench.load import INTERRUPTED, run_workload
from llmsizer.records import RequestRecord
from llmsizer.workload import Workload
from tests.bench.fakes import FakeClock


def closed(n: int, concurrency: int) -> Workload:
    lengths = np.full(n, 8, dtype=np.int64)
    return Workload(lengths, lengths, concurrency=concurrency)


def record(i: int, t: float) -> RequestRecord:
    return RequestRecord(i, t, 8, 8, token_times_s=np.array([t + 1.0]), finish_s=t + 1.0)


@pytest.mark.parametrize("concurrency", [1, 3, 16])
async def test_closed_loop_never_exceeds_its_concurrency(concurrency: int) -> None:
    rng = np.random.default_rng(0)
    clock = FakeClock()
    in_flight, peak = 0, 0
    sunk: list[RequestRecord] = []

    async def send(i: int) -> RequestRecord:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        for _ in range(int(rng.integers(1, 5))):  # requests finish out of order
            await asyncio.sleep(0)
        in_flight -= 1
        return record(i, clock.now())

    outcome = await run_workload(closed(40, concurrency), send, clock, sunk.append)
    assert peak == min(concurrency, 40)
    assert sorted(r.request_id for r in outcome.records) == list(range(40))
    assert list(outcome.records) == sunk and not outcome.interrupted


async def test_open_loop_sends_on_schedule() -> None:
    arrivals = np.array([5.0, 5.0, 5.5, 7.25, 9.0])
    lengths = np.full(5, 8, dtype=np.int64)
    clock = FakeClock()

    async def send(i: int) -> RequestRecord:
        return record(i, clock.now())

    outcome = await run_workload(Workload(lengths, lengths, arrival_s=arrivals), send, clock, print)
    sent = sorted((r.request_id, r.arrival_s) for r in outcome.records)
    assert [t for _, t in sent] == [0.0, 0.0, 0.5, 2.25, 4.0]  # shifted to start at 0


async def test_cancellation_turns_requests_in_flight_into_records() -> None:
    clock = FakeClock()
    started = asyncio.Event()
    sunk: list[RequestRecord] = []

    async def send(i: int) -> RequestRecord:
        if i >= 2:
            started.set()
            await asyncio.sleep(3600)
        return record(i, clock.now())

    task = asyncio.create_task(run_workload(closed(10, 2), send, clock, sunk.append))
    await started.wait()
    await asyncio.sleep(0)
    task.cancel()
    outcome = await task
    assert outcome.interrupted
    assert [r.error for r in outcome.records] == [None, None, INTERRUPTED, INTERRUPTED]
    assert sunk == list(outcome.records)


async def test_loop_watcher_measures_stalls() -> None:
    import time

    from llmsizer.bench.clock import MonotonicClock
    from llmsizer.bench.loop_lag import LoopLag, watch_loop

    overshoots: list[float] = []
    watcher = asyncio.create_task(watch_loop(MonotonicClock(), overshoots, period_s=0.001))
    await asyncio.sleep(0.005)
    time.sleep(0.05)  # a blocking call stalls the loop
    await asyncio.sleep(0.005)
    watcher.cancel()
    lag = LoopLag.of(overshoots)
    assert lag is not None and lag.stalled and lag.max_s >= 0.04


@pytest.mark.parametrize("arrivals", [None, np.arange(6, dtype=np.float64)])
async def test_a_send_that_raises_is_one_internal_record(arrivals: np.ndarray | None) -> None:
    """The last resort at the task boundary: the other requests go on."""
    lengths = np.full(6, 8, dtype=np.int64)
    workload = Workload(
        lengths, lengths, arrival_s=arrivals, concurrency=None if arrivals is not None else 2
    )
    clock = FakeClock()

    async def send(i: int) -> RequestRecord:
        if i == 2:
            raise KeyError("surprise")
        return record(i, clock.now())

    outcome = await run_workload(workload, send, clock, lambda _r: None)
    assert not outcome.interrupted and len(outcome.records) == 6
    errors = {r.request_id: r.error for r in outcome.records if r.error}
    assert errors == {2: "internal: KeyError: 'surprise'"}
