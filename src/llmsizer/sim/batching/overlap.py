"""TensorRT-LLM's overlap scheduler, as admission sees it: one step ahead.

With the overlap scheduler (the PyTorch backend's default: `disable_overlap_scheduler`
False), each executor iteration fetches new requests, schedules and launches step n + 1, and
only then waits for step n to finish and hands out its tokens (`PyExecutor._executor_loop_overlap`:
`_fetch_new_requests`, `_schedule`, `_forward_step`, then `_update_requests` and
`_process_previous_batch` for the previous batch; read at the mid-2025 version in the stored
index and at commit `0004396720054fd8e205cbf616f21f0b57c6b412`). Hence, for an engine with
requests in flight:

- a request arriving while step n runs is fetched when step n's tokens have been handed out,
  by the iteration that schedules step n + 2, and runs there (one step later than an engine
  that schedules each step after the previous one ends);
- a closed loop's next request is sent when its client receives the previous request's last
  token, which the executor hands out right before its next fetch; it arrives after that
  fetch (an HTTP request, tokenisation and a queue hop against a loop going straight on) and
  runs in the third step from there: step n + 3 when the last token came from step n;
- a request that produced its last token in step n is already in step n + 1 (the overlap
  scheduler "introduces one extra decoding step", TensorRT-LLM docs, *Overlap Scheduler*)
  and is torn down after it: its slot counts against `max_batch_size` when step n + 1 is
  scheduled (NVIDIA/TensorRT-LLM PR #18457: such a "retiring" request "is not torn down until
  the next iteration"; PR #16278: "the overlap executor prepares the next iteration before
  finished requests from the previous iteration release their sequence slots").

An executor with nothing in flight blocks on its queue and schedules each arrival at once
(and a retiring request's slot is not counted then: its extra step is not simulated).
The first token is not delayed: the iteration after a prompt's step hands it out as soon as
that step ends (`_handle_responses` answers `py_decoding_iter == 1` at once).

Not modelled: the retiring request's KV blocks (held one step more; the slot is what binds
at full batch), and its place in attention-DP admission (PR #18457).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque

from llmsizer.sim.request import SimRequest


class OverlapAdmission:
    """When each waiting request is fetched, and the slots retiring requests hold (module
    docstring). Steps are counted by the caller: `num_steps` is how many steps have started."""

    def __init__(self) -> None:
        self.fetched_after: dict[SimRequest, int] = {}  # request -> steps started first
        self.num_retiring = 0

    def arrived(self, r: SimRequest, num_steps: int, now: float | None) -> None:
        """`r` joined the queue at time `now` (the end of the last step, or `r`'s arrival on an
        idle engine), `num_steps` steps having started. It arrived during the last step
        (before `now`, or `now` unknown): it runs in the second step from there; at `now`
        itself, as a closed loop's next request does: the third."""
        at_boundary = now is not None and r.arrival_s >= now
        self.fetched_after[r] = num_steps + (2 if at_boundary else 1)

    def num_fetched(self, waiting: deque[SimRequest], num_steps: int, busy: bool) -> int:
        """How many of `waiting` (from the front) the executor has fetched for the next step,
        `num_steps` steps having started; all of them when nothing is in flight.

        The queue is in arrival order, so its fetch steps never decrease along it (a request
        arriving as a step ends, `+ 2`, comes after those that arrived during the step, `+ 1`;
        requests put back at the front were admitted before, fetched): the fetched ones are a
        prefix, found by bisection rather than a walk of a long queue."""
        if not busy:
            return len(waiting)
        fetched = self.fetched_after
        return bisect_right(waiting, num_steps, key=lambda r: fetched.get(r, 0))

    def admitted(self, r: SimRequest) -> None:
        self.fetched_after.pop(r, None)

    def finished(self, num_done: int) -> None:
        """The last step finished `num_done` requests: they hold their slots for the next."""
        self.num_retiring = num_done
