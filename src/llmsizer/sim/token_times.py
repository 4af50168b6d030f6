"""From the step log back to each token's time: the simulator's exact compact form.

While a request runs, it gets its first token at the step where its prompt completes, then
one token in each later step that runs decodes, counted by the decode clock. So a run is
stored as (first step, decode clock at entry, number of decode tokens) and expanded here:

    decode_steps = indices of steps that ran decodes        (decode clock -> step index)
    tokens       = end_s[first] , end_s[decode_steps[c0 : c0 + n]]

When those decode steps directly follow the first step (every decode-first policy), the
times are the contiguous slice end_s[first : first + n + 1]: a view, no copy, which keeps a
million-request run in memory.
"""

from __future__ import annotations

import numpy as np

from llmsizer.records import RequestRecord
from llmsizer.sim.request import SimRequest
from llmsizer.sim.result import StepLog


def _run_times(
    end_s: np.ndarray, decode_steps: np.ndarray, run: tuple[int, int, int]
) -> np.ndarray:
    first, c0, n = run
    if n == 0:
        return end_s[first : first + 1]
    if decode_steps[c0] == first + 1 and decode_steps[c0 + n - 1] == first + n:
        return end_s[first : first + n + 1]
    return np.concatenate((end_s[first : first + 1], end_s[decode_steps[c0 : c0 + n]]))


def token_times(finished: list[SimRequest], steps: StepLog) -> list[RequestRecord]:
    """One record per finished request, ordered by request id."""
    end_s = steps.end_s
    decode_steps = np.flatnonzero(steps.decoded)
    records = []
    for r in sorted(finished, key=lambda r: r.request_id):
        runs = [_run_times(end_s, decode_steps, run) for run in r.runs]
        times = runs[0] if len(runs) == 1 else np.concatenate(runs)
        records.append(
            RequestRecord(
                request_id=r.request_id,
                arrival_s=r.arrival_s,
                num_prompt_tokens=r.num_prompt_tokens,
                num_output_tokens_requested=r.num_output_tokens,
                token_times_s=times,
                scheduled_s=r.scheduled_s,
                finish_s=float(times[-1]),
                num_cached_tokens=r.num_cached_tokens,
                num_preemptions=r.num_preemptions,
            )
        )
    return records
