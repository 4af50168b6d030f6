"""Who held which batch slot when, and how many requests waited: the timeline's data.

Everything here is derived from records alone, so the same picture works for a simulated run
and for a measured one:

- A request takes a batch slot when it is first scheduled (`scheduled_s`) and gives it back
  when it finishes. Records measured by the benchmark client have no `scheduled_s` (a client
  cannot see the server's queue); their slot is taken at arrival instead, so the rows show
  requests in flight rather than engine slots.
- With static or dynamic batching (`padded=True`) a request keeps its slot until its whole
  batch has finished: the batch is the set of requests that share its `scheduled_s`, and the
  time from its own finish to the batch's last finish is padding.

One slot row, in time:

    start_s        first_token_s                 finish_s        release_s
      |--- prefill ---|---------- decode ----------|--- padding ---|   idle ...

Requests are assigned to rows greedily in order of `start_s` (ties by record order), each to
the lowest-numbered free row. For intervals this uses the fewest rows possible, the largest
number of requests holding a slot at one time, so a run that respected `max_num_seqs` fits in
`max_num_seqs` rows. Preempted requests are the exception: their records keep only the first
scheduling time, so they are drawn from it to their finish and may need rows beyond
`max_num_seqs` (counted in `num_extra_rows`).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from llmsizer.records import RequestRecord


@dataclass(frozen=True, slots=True, eq=False)
class Occupancy:
    """Slot intervals of the requests that held a slot, sorted by `start_s`; seconds.

    Invariants: `start_s <= first_token_s <= finish_s <= release_s` element-wise; two requests
    in the same `slot` never overlap (`release_s` of one <= `start_s` of the next);
    `0 <= slot < num_rows`; `release_s == finish_s` unless padded.
    """

    request_id: np.ndarray  # int64
    arrival_s: np.ndarray
    start_s: np.ndarray
    first_token_s: np.ndarray  # end of prefill; == finish_s when no token came
    finish_s: np.ndarray
    release_s: np.ndarray  # slot given back: finish_s, or its batch's last finish when padded
    slot: np.ndarray  # int64 row index
    num_rows: int
    num_extra_rows: int  # rows beyond max_num_seqs (preempted requests), 0 when none given
    padded: bool
    from_arrival: bool  # True for measured records: slots start at arrival_s
    complete_until_s: float  # every request that took a slot before this is here (inf: all)

    @property
    def num_requests(self) -> int:
        return int(self.start_s.shape[0])


@dataclass(frozen=True, slots=True, eq=False)
class RequestColumns:
    """Per-request arrays in seconds, one entry per record in record order. NaN marks a time
    the record lacks: `scheduled_s` (measured, or never scheduled), `first_token_s` (no
    token). `finish_s` falls back to the last token time, then NaN."""

    request_id: np.ndarray  # int64
    arrival_s: np.ndarray
    scheduled_s: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    ok: np.ndarray  # bool: no error and at least one token (counted by the metrics)

    @classmethod
    def from_records(cls, records: Sequence[RequestRecord]) -> RequestColumns:
        n = len(records)

        def col(values: Iterable[float]) -> np.ndarray:
            return np.fromiter(values, dtype=np.float64, count=n)

        nan = np.nan
        return cls(
            request_id=np.fromiter((r.request_id for r in records), dtype=np.int64, count=n),
            arrival_s=col(r.arrival_s for r in records),
            scheduled_s=col(nan if r.scheduled_s is None else r.scheduled_s for r in records),
            first_token_s=col(r.token_times_s[0] if r.num_output_tokens else nan for r in records),
            finish_s=col(_finish(r) for r in records),
            ok=np.fromiter((r.ok for r in records), dtype=bool, count=n),
        )

    @property
    def measured(self) -> bool:
        """True when no record has `scheduled_s`: a client-side measurement."""
        return bool(np.isnan(self.scheduled_s).all())


def _finish(r: RequestRecord) -> float:
    if r.finish_s is not None:
        return r.finish_s
    return float(r.token_times_s[-1]) if r.num_output_tokens else np.nan


def batch_release_s(start_s: np.ndarray, finish_s: np.ndarray) -> np.ndarray:
    """For each request, the last `finish_s` among the requests that share its `start_s`."""
    if start_s.size == 0:
        return finish_s.copy()
    _, batch = np.unique(start_s, return_inverse=True)
    batch_end = np.full(int(batch.max()) + 1, -np.inf)
    np.maximum.at(batch_end, batch, finish_s)
    return batch_end[batch]


def assign_slots(
    start_s: np.ndarray, release_s: np.ndarray, *, max_num_seqs: int | None = None
) -> tuple[np.ndarray, int, int]:
    """Greedy interval colouring: each interval `[start_s, release_s)` gets the lowest row free
    at its start, intervals taken in order of `start_s` (stable). O(n log n).

    Returns `(slot, num_rows, num_extra_rows)`. `num_rows` is `max_num_seqs` when given (idle
    rows included), or the rows used; if the intervals need more rows than `max_num_seqs`,
    `num_rows` is what they need and `num_extra_rows` the excess.
    """
    n = int(start_s.shape[0])
    slot = np.empty(n, dtype=np.int64)
    starts = start_s.tolist()
    ends = release_s.tolist()
    busy: list[tuple[float, int]] = []  # (release_s, row) of rows in use
    free: list[int] = []  # rows released so far, lowest first
    num_used = 0
    for i in np.argsort(start_s, kind="stable").tolist():
        while busy and busy[0][0] <= starts[i]:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            row = heapq.heappop(free)
        else:
            row = num_used
            num_used += 1
        slot[i] = row
        heapq.heappush(busy, (ends[i], row))
    if max_num_seqs is None:
        return slot, num_used, 0
    return slot, max(num_used, max_num_seqs), max(0, num_used - max_num_seqs)


def occupancy(
    records: Sequence[RequestRecord] | RequestColumns,
    *,
    padded: bool = False,
    max_num_seqs: int | None = None,
    max_requests: int | None = None,
    started_before_s: float | None = None,
) -> Occupancy:
    """The slot intervals of `records` (see the module docstring for the rules).

    `padded`: static or dynamic batching, a slot is held to the end of the request's batch;
    needs `scheduled_s` (ValueError otherwise). `max_num_seqs`: the number of rows to draw.
    `max_requests`, `started_before_s`: keep only the first N requests to take a slot, and
    only those that took it before the given time. What is kept stays exact (every request
    that started earlier is kept too, and padding is computed over whole batches);
    `complete_until_s` says up to when. Requests that were never scheduled (a simulated
    request with no `scheduled_s`) or have no finish time hold no slot.
    """
    if max_num_seqs is not None and max_num_seqs < 1:
        raise ValueError(f"max_num_seqs must be >= 1, got {max_num_seqs}")
    if max_requests is not None and max_requests < 1:
        raise ValueError(f"max_requests must be >= 1, got {max_requests}")
    cols = records if isinstance(records, RequestColumns) else RequestColumns.from_records(records)
    from_arrival = cols.measured
    if padded and from_arrival:
        raise ValueError("padded=True needs records with scheduled_s (a batch shares it)")
    start = cols.arrival_s if from_arrival else cols.scheduled_s
    keep = ~np.isnan(start) & ~np.isnan(cols.finish_s)
    start = start[keep]
    finish = np.maximum(cols.finish_s[keep], start)
    first = cols.first_token_s[keep]
    first = np.clip(np.where(np.isnan(first), finish, first), start, finish)
    release = batch_release_s(start, finish) if padded else finish
    by_start = np.argsort(start, kind="stable")
    num_kept = by_start.size
    if started_before_s is not None:
        num_kept = int(np.searchsorted(start[by_start], started_before_s, side="left"))
    if max_requests is not None:
        num_kept = min(num_kept, max_requests)
    order = by_start[:num_kept]
    complete_until_s = float(start[by_start[num_kept]]) if num_kept < by_start.size else np.inf
    slot, num_rows, num_extra = assign_slots(
        start[order], release[order], max_num_seqs=max_num_seqs
    )
    return Occupancy(
        request_id=cols.request_id[keep][order],
        arrival_s=cols.arrival_s[keep][order],
        start_s=start[order],
        first_token_s=first[order],
        finish_s=finish[order],
        release_s=release[order],
        slot=slot,
        num_rows=num_rows,
        num_extra_rows=num_extra,
        padded=padded,
        from_arrival=from_arrival,
        complete_until_s=complete_until_s,
    )


@dataclass(frozen=True, slots=True, eq=False)
class QueueSize:
    """A step function: `sizes[i]` requests wait during `[times_s[i], times_s[i+1])`, none
    before `times_s[0]`; the last size holds for ever. `times_s` strictly increasing."""

    times_s: np.ndarray
    sizes: np.ndarray  # int64

    def at(self, t_s: np.ndarray | float) -> np.ndarray:
        """The queue size at each time in `t_s` (right-continuous: an arrival at t counts)."""
        i = np.searchsorted(self.times_s, t_s, side="right") - 1
        padded = np.concatenate(([0], self.sizes))  # index 0: before the first event
        return padded[i + 1]

    def between(self, t0_s: float, t1_s: float) -> tuple[np.ndarray, np.ndarray]:
        """`(x, y)` to draw the steps over `[t0_s, t1_s]` ('steps-post' / plotly 'hv')."""
        inside = (self.times_s > t0_s) & (self.times_s < t1_s)
        x = np.concatenate(([t0_s], self.times_s[inside], [t1_s]))
        y = self.at(x)
        y[-1] = y[-2] if y.size > 1 else y[-1]
        return x, y


def queue_size(arrival_s: np.ndarray, scheduled_s: np.ndarray) -> QueueSize:
    """Requests with `arrival_s <= t < scheduled_s`, as a step function of t (seconds).

    A NaN or infinite `scheduled_s` (never scheduled) waits for ever; a NaN arrival is ignored.
    Simultaneous events are merged, so a request scheduled the moment it arrives never counts.
    """
    arrival = np.asarray(arrival_s, dtype=np.float64)
    leave = np.asarray(scheduled_s, dtype=np.float64)
    valid = ~np.isnan(arrival)
    arrival, leave = arrival[valid], leave[valid]
    leave = leave[np.isfinite(leave)]
    times = np.concatenate((arrival, leave))
    deltas = np.concatenate((np.ones(arrival.size, np.int64), -np.ones(leave.size, np.int64)))
    order = np.argsort(times, kind="stable")
    times, sizes = times[order], np.cumsum(deltas[order])
    last_of_time = np.append(times[1:] != times[:-1], True) if times.size else times.astype(bool)
    return QueueSize(times_s=times[last_of_time], sizes=sizes[last_of_time])
