"""Arrivals an instance of a fleet receives as the router sends them, not known in advance."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from llmsizer.sim.arrivals import Arrivals
from llmsizer.sim.request import SimRequest


class RoutedArrivals(Arrivals):
    """An instance's share of the fleet's requests, queued by `push` in arrival order.

    Shares the fleet-wide request arrays and prefix-hash geometry with `base` (one
    `Arrivals` over the whole workload), so 64 instances cost one copy of the lengths.
    Open loop only: a finished request does not bring the next one; the finish is counted
    with its time, so the fleet knows how many requests had finished at an arrival that
    falls inside the instance's last step (whose finishers are applied at its start).
    """

    queue: deque[tuple[float, int]]
    num_finished: int
    last_finish_s: float
    num_finished_last: int  # how many finished at `last_finish_s`

    finish_times: list[float]
    computed: Sequence[int] | None

    @classmethod
    def share(cls, base: Arrivals, computed: Sequence[int] | None = None) -> RoutedArrivals:
        """`computed[i]`: prompt tokens of request i already in KV when it arrives (a KV
        handoff from a prefill worker; the engine allocates their blocks at admission)."""
        routed = cls.__new__(cls)
        routed.__dict__.update(base.__dict__)
        routed.queue = deque()
        routed.num_finished = 0
        routed.last_finish_s = 0.0
        routed.num_finished_last = 0
        routed.finish_times = []
        routed.computed = computed
        return routed

    def num_finished_by(self, t: float) -> int:
        """Requests finished at or before `t`, for `t` no earlier than the last step's start."""
        late = self.num_finished_last if self.last_finish_s > t else 0
        return self.num_finished - late

    def push(self, request_id: int, arrival_s: float) -> None:
        self.queue.append((arrival_s, request_id))

    def next_s(self) -> float | None:
        return self.queue[0][0] if self.queue else None

    def pop_until(self, now: float) -> list[SimRequest]:
        out: list[SimRequest] = []
        queue = self.queue
        while queue and queue[0][0] <= now:
            t, i = queue.popleft()
            r = self._make(i, t)
            if self.computed is not None:
                r.num_computed_tokens = self.computed[i]
            out.append(r)
        return out

    def on_finish(self, now: float) -> None:
        if now != self.last_finish_s:
            self.last_finish_s = now
            self.num_finished_last = 0
        self.num_finished_last += 1
        self.num_finished += 1
        self.finish_times.append(now)
