"""`RateSearch`: the highest Poisson rate at which one configuration meets every limit, found
one probe at a time so that a branch and bound can interleave configurations.

1. Walk down `GRID`, fractions of the configuration's capacity, until a probe meets every
   limit. The walk starts at 95 %: a queue at utilisation 1 never settles, however a finite
   run looks. Probes at high utilisation are the cheap ones (large batches, few steps).
2. Bisect between that rate and the failing one above until they are within
   `RATE_TOLERANCE` of each other.

Each `step` is one probe. `upper_rate` is the most the search can still return: the lowest
rate that failed, else the top of the grid; a bound on the objective follows from it.

A warm start (`start`, a fraction of capacity, for re-searches of a similar case such as the
uncertainty band's) probes there first, then walks the grid up while probes pass or down
while they fail. Without one, the walk is the plain one from the top.

Probes are a deterministic function of the rate and both phases depend on the limits only
through pass or fail, so two searches with limits L1 tighter than L2 probe the same rates
until the first rate that passes L2 but not L1; from there L1's answer stays below it and
L2's at or above it. A tighter limit never gives a higher rate.

`stop_early`: probes may stop once certain to miss the limits (`early_stop`), which leaves
every verdict, and so the search, as it was; for searches that report no failing point's
latencies (the lever table's).

`counts` (`Counts`), for searches that report the instances a load needs and nothing finer
(the lever table's): each probe goes to the lowest rate that needs as few instances as the
rate the walk would probe, and bisection halves the instance counts left between the two
ends, not the rates. A pass there proves what a pass at the unsnapped rate would, a failure
proves more, and the search settles (`bracketed` with adjacent counts) in fewer probes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from llmsizer.sizing.limits import Binding, Limits
from llmsizer.sizing.probe import Pause, Point, Probe

GRID = (0.95, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05)
RATE_TOLERANCE = 0.03  # bisection stops when (failed - passed) / passed is at most this
BELOW = 1 - 1e-6  # a rate just under a failing one (far above `Counts.of`'s rounding)


@dataclass(frozen=True, slots=True)
class Counts:
    """Instances needed at `load_rps` (req/s): `max(1, ceil(load / rate))`, as
    `sizing.configuration.Sizing` counts them."""

    load_rps: float

    def of(self, rate: float) -> int:
        """Instances that serve the load at `rate` req/s each."""
        return max(1, math.ceil(self.load_rps / rate - 1e-9))

    def lowest_rate(self, num_instances: int) -> float:
        """The lowest rate at which `num_instances` serve the load."""
        return self.load_rps / num_instances

    def snapped(self, rate: float) -> float:
        """The lowest rate that needs as few instances as `rate` (at most `rate`, up to
        `of`'s rounding)."""
        return self.lowest_rate(self.of(rate))


class RateSearch:
    """The search state of one configuration (module docstring). Offline (`online` False)
    there is nothing to search: the rate is the capacity."""

    def __init__(
        self,
        probe: Probe,
        limits: Limits,
        online: bool = True,
        start: float | None = None,
        stop_early: bool = False,
        counts: Counts | None = None,
    ) -> None:
        self.probe = probe
        self.counts = counts
        self.limits = limits
        self._stop_for = limits if stop_early else None
        self.online = online
        self.capacity = probe.capacity()
        self.passed: Point | None = None
        self.failed: Point | None = None
        if start is None:
            self._down, self._up = list(GRID), []
        else:
            start = min(start, GRID[0])
            self._down = [start, *(f for f in GRID if f < start)]
            self._up = sorted(f for f in GRID if f > start)

    @property
    def exhausted(self) -> bool:
        """Every fraction down to the bottom of the grid failed: no useful rate."""
        return self.passed is None and not self._down

    @property
    def bracketed(self) -> bool:
        """A passing rate with a failing one above it, or the top of the grid passed."""
        if self.passed is None:
            return False
        if self.failed is not None and self.failed.offered_rate > self.passed.offered_rate:
            return True
        return not self._up

    @property
    def done(self) -> bool:
        if not self.online or self.exhausted:
            return True
        if not self.bracketed:
            return False
        if self.failed is None or self.failed.offered_rate < self.passed_rate:
            return True  # the top of the grid passed
        gap = self.failed.offered_rate - self.passed_rate
        if self.counts is not None and self._most_least()[0] == self._most_least()[1]:
            return True  # both ends need the same instances
        return gap <= RATE_TOLERANCE * self.passed_rate

    @property
    def passed_rate(self) -> float:
        assert self.passed is not None
        return self.passed.offered_rate

    @property
    def rate(self) -> float | None:
        """The highest rate known to meet every limit (the capacity offline)."""
        if not self.online:
            return self.capacity
        return None if self.passed is None else self.passed.offered_rate

    def upper_rate(self) -> float:
        """No rate at or above this can be returned (except the grid top itself)."""
        if not self.online:
            return self.capacity
        if self.failed is not None and (self.passed is None or self.bracketed):
            below = BELOW if self.counts is not None else 1.0  # counts probe thresholds
            return max(self.failed.offered_rate * below, self.rate or 0.0)
        return GRID[0] * self.capacity

    def binding(self) -> Binding | None:
        """What stopped the rate: the limit furthest over at the failing rate above, or
        `throughput` when the top of the grid met every limit (or offline)."""
        if self.failed is None or (self.passed and self.failed.offered_rate < self.passed_rate):
            return "throughput"
        return self.limits.binding(self.failed.latencies)

    def step(
        self, beats: Callable[[float], bool] | None = None, pause: Pause | None = None
    ) -> bool:
        """One probe: the next grid fraction, or the middle of the bracket. With `counts`,
        and `beats` (whether a pass at a rate would beat the best found elsewhere: a branch
        and bound's incumbent), a search with no pass yet probes the lowest rate that
        would: a failure there ends it (the bound), a pass walks the grid up from there.
        `pause`: a watched probe may be put aside between slices (`Probe.at_rate_or_pause`),
        leaving the search as it was: False; True once the probe's verdict is in."""
        if self.done:
            raise RuntimeError("the rate search is done")
        rate, move = self._next(beats)
        if pause is None:  # (a probe without pauses is all a test's fake needs)
            point: Point | None = self.probe.at_rate(rate, self._stop_for)
        elif (point := self.probe.at_rate_or_pause(rate, self._stop_for, pause)) is None:
            return False
        assert point is not None
        if move == "floor":
            self._up = [f for f in GRID[::-1] if f * self.capacity > rate]
        elif move == "down":
            self._down.pop(0)
        elif move == "up":
            self._up.pop(0)
        if self.limits.met_by(point.latencies):
            self.passed = point
        else:
            self.failed = point
        return True

    def walk_rates(self) -> list[float]:
        """The rates the walk down the grid has still to probe (`step`'s, in order)."""
        return [self._snap(f * self.capacity) for f in self._down]

    def next_rate(self, beats: Callable[[float], bool] | None = None) -> float:
        """The rate `step(beats)` would probe (nothing simulated): a branch and bound orders
        its configurations by what their next probes would prove."""
        return self._next(beats)[0]

    def _next(self, beats: Callable[[float], bool] | None) -> tuple[float, str]:
        """The next probe's rate and how `step` gets there: `floor` (the bound first),
        `down` or `up` the grid, or `middle` of the bracket."""
        floor = self._floor(beats) if self.passed is None else None
        if floor is not None:
            return floor, "floor"
        if self.passed is None:
            return self._snap(self._down[0] * self.capacity), "down"
        if not self.bracketed:
            return self._snap(self._up[0] * self.capacity), "up"
        assert self.failed is not None
        return self._middle(self.passed_rate, self.failed.offered_rate), "middle"

    def _floor(self, beats: Callable[[float], bool] | None) -> float | None:
        """The lowest rate of the most instances that `beats` (`step`), if any."""
        if self.counts is None or beats is None:
            return None
        n = self.counts.of(self.upper_rate())
        if not beats(self.counts.lowest_rate(n)):
            return None
        while beats(self.counts.lowest_rate(n + 1)):
            n += 1
        floor = self.counts.lowest_rate(n)
        failed = self.failed.offered_rate if self.failed is not None else None
        return None if failed is not None and floor >= failed else floor  # known to fail

    def _snap(self, rate: float) -> float:
        return rate if self.counts is None else self.counts.snapped(rate)

    def _middle(self, passed: float, failed: float) -> float:
        """The bisection's next rate: the middle of the bracket, or with `counts` the lowest
        rate of the middle count between the ends' (strictly inside the bracket)."""
        if self.counts is None:
            return 0.5 * (passed + failed)
        most, least = self._most_least()
        return self.counts.lowest_rate((most + least) // 2)

    def _most_least(self) -> tuple[int, int]:
        """Instances at the passing rate, and the fewest any rate below the failing one
        could need (`counts`, a bracket)."""
        assert self.counts is not None and self.failed is not None
        failed = self.failed.offered_rate * BELOW
        return self.counts.of(self.passed_rate), self.counts.of(failed)

    def run(self) -> RateSearch:
        """Step until done."""
        while not self.done:
            self.step()
        return self
