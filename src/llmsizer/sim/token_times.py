"""From the step log back to each token's time: the simulator's exact compact form.

While a request runs, it gets its first token at the step where its prompt completes, then
one token in each later step that runs decodes, counted by the decode clock. So a run is
stored as (first step, decode clock at entry, number of decode tokens) and expanded here:

    decode_steps = indices of steps that ran decodes        (decode clock -> step index)
    tokens       = end_s[first] , end_s[decode_steps[c0 : c0 + n]]

When those decode steps directly follow the first step (every decode-first policy), the
times are the contiguous slice end_s[first : first + n + 1], so the request's tokens are a
*span* of the step end times: the `RecordTable` stores its start and length, no copy. Runs
that are not one slice (preempted requests, prefill-first steps) are expanded and appended
after the step end times in the same buffer.
"""

from __future__ import annotations

from array import array

import numpy as np

from llmsizer.records import RecordTable
from llmsizer.sim.request import SimRequest
from llmsizer.sim.result import StepLog

# One row per finished request in `FinishedLog`: its times, then its counts (ids and counts
# in an integer array: converting them to doubles one by one cost a compiled engine ~5 %).
FINISHED_TIMES = ("arrival_s", "scheduled_s")
FINISHED_COUNTS = (
    "request_id",
    "num_prompt_tokens",
    "num_output_tokens_requested",
    "num_cached_tokens",
    "num_preemptions",
    "first_step",  # the first (only) run: step of its first token,
    "entry_clock",  # decode clock at entry,
    "num_decode_tokens",  # decode tokens after the first
)


class FinishedLog:
    """Finished requests as flat rows, so the engine drops each `SimRequest` as it ends."""

    def __init__(self) -> None:
        self.times = array("d")
        self.counts = array("q")
        self.restarted: dict[int, list[tuple[int, int, int]]] = {}  # id -> runs, when > 1

    def __len__(self) -> int:
        return len(self.times) // len(FINISHED_TIMES)

    def request_ids(self, start: int) -> list[int]:
        """Ids of the requests finished from the `start`-th on, in finishing order."""
        width = len(FINISHED_COUNTS)
        return self.counts[start * width :: width].tolist()

    def add(self, r: SimRequest) -> None:
        runs = r.runs
        if len(runs) > 1:
            self.restarted[r.request_id] = runs
        first, c0, n = runs[-1]
        scheduled = r.scheduled_s
        assert scheduled is not None  # a finished request was scheduled
        self.times.extend((r.arrival_s, scheduled))
        self.counts.extend(
            (
                r.request_id,
                r.num_prompt_tokens,
                r.num_output_tokens,
                r.num_cached_tokens,
                r.num_preemptions,
                first,
                c0,
                n,
            )
        )


def first_tokens(
    finished: FinishedLog, end_s: np.ndarray, first_token_delay_s: float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The finished requests' ids, arrival times and first token times (a preempted one's
    first run's, after the hold), in finishing order: `record_table`'s values, without it."""
    times = np.frombuffer(finished.times, dtype=np.float64).reshape(-1, len(FINISHED_TIMES))
    counts = np.frombuffer(finished.counts, dtype=np.int64).reshape(-1, len(FINISHED_COUNTS))
    ids, first = counts[:, 0].copy(), counts[:, 5].copy()  # copies: the log grows on
    if finished.restarted:
        for i in np.flatnonzero(np.isin(ids, list(finished.restarted))).tolist():
            first[i] = finished.restarted[int(ids[i])][0][0]
    first_s = end_s[first]
    arrival_s = times[:, 0].copy()
    return ids, arrival_s, first_s + first_token_delay_s if first_token_delay_s > 0 else first_s


def _run_times(
    end_s: np.ndarray, decode_steps: np.ndarray, run: tuple[int, int, int]
) -> np.ndarray:
    first, c0, n = run
    if n == 0:
        return end_s[first : first + 1]
    if decode_steps[c0] == first + 1 and decode_steps[c0 + n - 1] == first + n:
        return end_s[first : first + n + 1]
    return np.concatenate((end_s[first : first + 1], end_s[decode_steps[c0 : c0 + n]]))


def _id_order(ids: np.ndarray) -> np.ndarray:
    """`argsort(ids)` for distinct non-negative ids (each request finishes once), by
    placing each row at its id: O(rows + largest id), where a sort is O(rows log rows)."""
    if not ids.shape[0]:
        return np.zeros(0, dtype=np.int64)
    row_at = np.full(int(ids.max()) + 1, -1, dtype=np.int64)
    row_at[ids] = np.arange(ids.shape[0])
    return row_at[row_at >= 0]


def record_table(
    finished: FinishedLog, steps: StepLog, first_token_delay_s: float = 0.0
) -> RecordTable:
    """One row per finished request, ordered by request id; token times as spans."""
    times = np.frombuffer(finished.times, dtype=np.float64).reshape(-1, len(FINISHED_TIMES))
    counts = np.frombuffer(finished.counts, dtype=np.int64).reshape(-1, len(FINISHED_COUNTS))
    order = _id_order(counts[:, 0])
    arrival_s, scheduled_s = np.ascontiguousarray(times[order].T)  # one row a column
    counts = np.ascontiguousarray(counts[order].T)
    ints = {name: counts[i] for i, name in enumerate(FINISHED_COUNTS)}
    end_s = steps.end_s
    decode_steps = np.flatnonzero(steps.decoded)
    first, c0, n = ints["first_step"], ints["entry_clock"], ints["num_decode_tokens"]
    # A run is one slice when its decode clocks c0 .. c0+n-1 are the steps right after first.
    one_slice = n == 0
    if decode_steps.shape[0]:  # (n == 0 rows index a valid clock too, then are masked)
        last_clock = np.minimum(c0 + n - 1, decode_steps.shape[0] - 1)
        first_clock = np.minimum(c0, last_clock)
        one_slice |= (decode_steps[first_clock] == first + 1) & (
            decode_steps[last_clock] == first + n
        )
    start = first.copy()
    length = n + 1
    parts = [end_s]
    size = end_s.shape[0]
    restarted = finished.restarted
    for i in np.flatnonzero(~one_slice | np.isin(ints["request_id"], list(restarted))).tolist():
        runs = restarted.get(int(ints["request_id"][i]), [(int(first[i]), int(c0[i]), int(n[i]))])
        # (not `times`: a compiled build checks a name's shape type, 2-D above)
        run_times = np.concatenate([_run_times(end_s, decode_steps, run) for run in runs])
        start[i], length[i] = size, run_times.shape[0]
        parts.append(run_times)
        size += run_times.shape[0]
    buffer = np.concatenate(parts) if len(parts) > 1 else end_s
    last = buffer[start + length - 1]
    if first_token_delay_s > 0:  # the client's last token: max(t_last, t_first + D)
        last = np.maximum(last, buffer[start] + first_token_delay_s)
    return RecordTable(
        request_id=ints["request_id"],
        arrival_s=arrival_s,
        scheduled_s=scheduled_s,
        finish_s=last,
        num_prompt_tokens=ints["num_prompt_tokens"],
        num_output_tokens_requested=ints["num_output_tokens_requested"],
        num_cached_tokens=ints["num_cached_tokens"],
        num_preemptions=ints["num_preemptions"],
        token_start=start,
        num_output_tokens=length,
        token_buffer=buffer,
        first_token_delay_s=first_token_delay_s,
    )
