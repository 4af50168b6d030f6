"""A run bounded by a time budget: each stage gets its share, and samples coarse to fine.

`collect` runs its stages (the copy, square GEMMs, the model's GEMMs, attention, ...) one
after another. `Budget` gives each the rest of the budget divided over the stages left,
weighted by their points, so a slow early stage cannot starve the later ones; a stage pulls
points from its generator until its share is spent. Every stage visits its sizes coarse to
fine (`coarse_to_fine`: both ends, then the middle, then the quarters ...), so the points a
stage reaches before its share runs out span its whole range, and the fit sees small and
large sizes alike. A stage always times its first point (its smallest size), and the
timer cuts a point's repeats short near the stage's deadline (`kernels.Timer.until`): the
budget bounds the run's time to itself plus, per stage, one point's set-up and two calls of
its kernel (a warm-up and a repeat).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")


def coarse_to_fine(values: Sequence[T]) -> list[T]:
    """`values` reordered: the first and last, then the middle of each gap, widest first."""
    n = len(values)
    if n <= 2:
        return list(values)
    order, gaps = [0, n - 1], [(0, n - 1)]
    while gaps:
        next_gaps = []
        for lo, hi in gaps:
            if hi - lo > 1:
                mid = (lo + hi) // 2
                order.append(mid)
                next_gaps += [(lo, mid), (mid, hi)]
        gaps = next_gaps
    return [values[i] for i in order]


@dataclass
class Budget:
    """Seconds for the whole run over stages of `weights` points each (module docstring);
    `clock` is injectable for tests."""

    seconds: float
    weights: list[int]
    clock: Callable[[], float] = time.perf_counter
    started: float = field(init=False)
    stage: int = field(init=False, default=0)
    deadline: float = field(init=False, default=math.inf)  # the running stage's

    def __post_init__(self) -> None:
        if not self.seconds > 0:
            raise ValueError(f"budget {self.seconds} s; allowed: more than 0 s")
        self.started = self.clock()

    @property
    def elapsed_s(self) -> float:
        return self.clock() - self.started

    def share_s(self) -> float:
        """Seconds the current stage may take: what is left, by the stages' points."""
        left = max(0.0, self.seconds - self.elapsed_s)
        remaining = self.weights[self.stage :]
        return left * remaining[0] / max(1, sum(remaining))

    def run(self, points: Iterable[T], *, cut: bool = True) -> Iterator[T]:
        """The stage's points until its share is spent (always the first), then the next
        stage's turn. `cut=False`: a stage that keeps to its share itself and measures its
        points before yielding the first (the all-reduce); every one is kept."""
        self.deadline = self.clock() + self.share_s()
        try:
            for n, point in enumerate(points):
                yield point
                over = cut and self.clock() >= self.deadline
                if n + 1 < self.weights[self.stage] and over:
                    return
        finally:
            self.stage += 1

    def eta_s(self, done_points: int) -> float:
        """Seconds left at the current pace, capped by the budget."""
        todo = sum(self.weights[self.stage :])
        pace = self.elapsed_s / max(1, done_points)
        return min(max(0.0, self.seconds - self.elapsed_s), pace * todo)
