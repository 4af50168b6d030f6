"""How late the client's own event loop ran: the benchmark watching itself.

A request's times are stamped when the client's event loop gets to the bytes, so a loop
that stalls (a busy machine, a slow callback) adds its stall to the measured latencies. A
watcher task sleeps `period_s` again and again during the run and keeps how much later than
asked it woke; the result reports the 99th percentile and the maximum of that overshoot.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llmsizer.bench.clock import Clock

WATCH_PERIOD_S = 0.01
LOOP_LAG_WARN_S = 0.02  # a stall this long shows in millisecond-scale latencies


@dataclass(frozen=True, slots=True)
class LoopLag:
    """Overshoot of the watcher's sleeps, in seconds."""

    p99_s: float
    max_s: float
    num_samples: int

    @classmethod
    def of(cls, overshoots_s: list[float]) -> LoopLag | None:
        if not overshoots_s:
            return None
        values = np.asarray(overshoots_s)
        return cls(float(np.percentile(values, 99)), float(values.max()), values.size)

    @property
    def stalled(self) -> bool:
        return self.max_s > LOOP_LAG_WARN_S


async def watch_loop(
    clock: Clock, overshoots_s: list[float], period_s: float = WATCH_PERIOD_S
) -> None:
    """Append how late each sleep of `period_s` woke up, until cancelled."""
    while True:
        due = clock.now() + period_s
        await clock.sleep_until(due)
        overshoots_s.append(max(clock.now() - due, 0.0))
