"""The run's clock: seconds since the run started, and a way to wait for a moment on it.

The benchmark reads time only through a `Clock`, so tests drive it with a fake one and get
exact, instant schedules. `MonotonicClock` is the edge: `time.perf_counter`, shifted so that
the run starts at 0 (the convention of `llmsizer.records`).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the run started."""
        ...

    async def sleep_until(self, t_s: float) -> None:
        """Return once `now() >= t_s` (at once if that moment has passed)."""
        ...


@dataclass(frozen=True, slots=True)
class MonotonicClock:
    """`time.perf_counter`, minus its value when the clock was made."""

    origin_s: float = field(default_factory=time.perf_counter)

    def now(self) -> float:
        return time.perf_counter() - self.origin_s

    async def sleep_until(self, t_s: float) -> None:
        delay = t_s - self.now()
        if delay > 0:
            await asyncio.sleep(delay)
