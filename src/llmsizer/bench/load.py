"""Drive a `Workload` against a send function: closed-loop concurrency or open-loop arrivals.

- Closed loop (`arrival_s is None`): `concurrency` workers; each sends its next request as
  soon as its previous one finishes, so at most `concurrency` are ever in flight.
- Open loop: request i is sent at `arrival_s[i] - arrival_s[0]` on the run's clock, whatever
  is in flight.

The send function owns the HTTP and returns a record; this module only decides when to call
it. Each record goes to `on_record` as soon as it exists (the JSONL writer), so a crash keeps
everything finished before it. Every request sent ends as exactly one record: on cancellation
(Ctrl-C, SIGTERM) the requests in flight become records with an `interrupted` error and the
outcome says the run was interrupted; a send function that raises anyway gives an `internal`
record (the last resort: `client.send_request` never raises), so one request never ends the
others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from llmsizer.bench.clock import Clock
from llmsizer.bench.failure import Failure, FailureKind
from llmsizer.records import RequestRecord
from llmsizer.workload import Workload

SendFn = Callable[[int], Awaitable[RequestRecord]]
RecordSink = Callable[[RequestRecord], None]
Step = Callable[[int], Coroutine[Any, Any, None]]

INTERRUPTED = str(
    Failure(FailureKind.INTERRUPTED, "the run was stopped before this request finished")
)


@dataclass(frozen=True, slots=True)
class LoadOutcome:
    """The records of one run, in completion order, and whether it was cut short."""

    records: tuple[RequestRecord, ...]
    interrupted: bool


async def run_workload(
    workload: Workload, send: SendFn, clock: Clock, on_record: RecordSink
) -> LoadOutcome:
    """Send every request of `workload` by its schedule (see the module notes)."""
    in_flight: dict[int, float] = {}
    records: list[RequestRecord] = []

    def keep(record: RequestRecord) -> None:
        records.append(record)
        on_record(record)

    async def one(i: int) -> None:
        in_flight[i] = clock.now()
        try:
            record = await send(i)
        except Exception as e:  # the task boundary: see the module notes
            record = _failed(workload, i, in_flight[i], clock.now(), _internal(e))
        del in_flight[i]
        keep(record)

    try:
        if workload.arrival_s is None:
            await _closed_loop(workload.num_requests, workload.concurrency or 1, one)
        else:
            await _open_loop(workload, one, clock)
    except asyncio.CancelledError:
        _uncancel()
        now = clock.now()
        for i, sent in sorted(in_flight.items()):
            keep(_failed(workload, i, sent, now, INTERRUPTED))
        return LoadOutcome(tuple(records), interrupted=True)
    return LoadOutcome(tuple(records), interrupted=False)


async def _closed_loop(num_requests: int, concurrency: int, one: Step) -> None:
    indices = iter(range(num_requests))  # shared: each worker takes the next index

    async def worker() -> None:
        for i in indices:
            await one(i)

    async with asyncio.TaskGroup() as tg:
        for _ in range(min(concurrency, num_requests)):
            tg.create_task(worker())


async def _open_loop(workload: Workload, one: Step, clock: Clock) -> None:
    assert workload.arrival_s is not None
    start = float(workload.arrival_s[0]) if workload.num_requests else 0.0
    async with asyncio.TaskGroup() as tg:
        for i, t in enumerate(workload.arrival_s.tolist()):
            await clock.sleep_until(t - start)
            tg.create_task(one(i))


def _failed(workload: Workload, i: int, sent_s: float, now_s: float, error: str) -> RequestRecord:
    return RequestRecord(
        request_id=i,
        arrival_s=sent_s,
        num_prompt_tokens=int(workload.num_prompt_tokens[i]),
        num_output_tokens_requested=int(workload.num_output_tokens[i]),
        finish_s=now_s,
        error=error,
    )


def _internal(e: Exception) -> str:
    return str(Failure(FailureKind.INTERNAL, f"{type(e).__name__}: {e}"))


def _uncancel() -> None:
    """Clear this task's pending cancellation: the interruption is handled here, as data."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
