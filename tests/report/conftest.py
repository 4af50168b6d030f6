"""Factories for report tests: records made by hand, never by the simulator."""

from __future__ import annotations

import numpy as np

from llmsizer.records import RequestRecord


def make_record(
    request_id: int,
    *,
    arrival_s: float,
    scheduled_s: float | None,
    first_token_s: float,
    finish_s: float,
    num_output_tokens: int = 10,
    error: str | None = None,
) -> RequestRecord:
    """A record whose tokens come evenly from `first_token_s` to `finish_s`."""
    return RequestRecord(
        request_id=request_id,
        arrival_s=arrival_s,
        num_prompt_tokens=100,
        num_output_tokens_requested=num_output_tokens,
        token_times_s=np.linspace(first_token_s, finish_s, num_output_tokens),
        scheduled_s=scheduled_s,
        finish_s=finish_s,
        error=error,
    )


def static_batches(
    num_requests: int = 12, max_num_seqs: int = 4, prefill_s: float = 0.08, step_s: float = 0.01
) -> list[RequestRecord]:
    """The course's static batching: a burst at t=0, batches of `max_num_seqs` that start
    together, one prefill step, then one decode step per token until the longest is done."""
    rng = np.random.default_rng(1)
    records = []
    start_s = 0.0
    for first in range(0, num_requests, max_num_seqs):
        ids = range(first, min(first + max_num_seqs, num_requests))
        lengths = rng.integers(2, 20, len(ids))
        for i, n in zip(ids, lengths, strict=True):
            t1 = start_s + prefill_s
            records.append(
                make_record(
                    i,
                    arrival_s=0.0,
                    scheduled_s=start_s,
                    first_token_s=t1,
                    finish_s=t1 + step_s * (int(n) - 1),
                    num_output_tokens=int(n),
                )
            )
        start_s += prefill_s + step_s * (int(lengths.max()) - 1)
    return records


def continuous(
    num_requests: int = 200, max_num_seqs: int = 8, rate: float = 50.0, seed: int = 0
) -> list[RequestRecord]:
    """A FIFO queue with `max_num_seqs` servers (M/G/c): a request is scheduled when it has
    arrived and a slot is free, and holds the slot until it finishes."""
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1 / rate, num_requests))
    free_at = np.zeros(max_num_seqs)
    records = []
    for i, arrival in enumerate(arrivals):
        k = int(np.argmin(free_at))
        start = max(float(arrival), float(free_at[k]))
        n = int(rng.integers(1, 40))
        first = start + rng.uniform(0.01, 0.05)
        finish = first + 0.005 * (n - 1)
        free_at[k] = finish
        records.append(
            make_record(
                i,
                arrival_s=float(arrival),
                scheduled_s=start,
                first_token_s=first,
                finish_s=finish,
                num_output_tokens=n,
            )
        )
    return records


def measured(records: list[RequestRecord]) -> list[RequestRecord]:
    """The same requests as a benchmark client sees them: no scheduled_s."""
    return [
        RequestRecord(
            request_id=r.request_id,
            arrival_s=r.arrival_s,
            num_prompt_tokens=r.num_prompt_tokens,
            num_output_tokens_requested=r.num_output_tokens_requested,
            token_times_s=r.token_times_s,
            finish_s=r.finish_s,
        )
        for r in records
    ]
