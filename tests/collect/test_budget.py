"""The time budget: each stage gets its share of what is left and samples coarse to fine."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from llmsizer.collect.budget import Budget, coarse_to_fine


def test_coarse_to_fine_visits_both_ends_then_the_middles() -> None:
    assert coarse_to_fine([1, 2, 4, 8, 16, 32, 64, 128, 256]) == [
        1, 256, 16, 4, 64, 2, 8, 32, 128
    ]  # fmt: skip
    values = list(range(15))
    order = coarse_to_fine(values)
    assert sorted(order) == values  # every value once
    assert order[:3] == [0, 14, 7]
    assert coarse_to_fine([3]) == [3] and coarse_to_fine([]) == []


class FakeClock:
    """Each point a stage yields costs `step` seconds."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def timed_points(clock: FakeClock, n: int, step: float) -> Iterator[int]:
    for i in range(n):
        clock.now += step
        yield i


def test_each_stage_gets_its_share_of_what_is_left_and_always_its_first_point() -> None:
    clock = FakeClock()
    budget = Budget(10.0, [10, 10], clock=clock)
    assert budget.share_s() == pytest.approx(5.0)
    first = list(budget.run(timed_points(clock, 10, 1.0)))
    assert first == [0, 1, 2, 3, 4]  # its 5 s spent
    assert budget.share_s() == pytest.approx(5.0)  # the rest, to the last stage
    second = list(budget.run(timed_points(clock, 10, 0.1)))
    assert second == list(range(10))  # fast points: all of them
    assert budget.elapsed_s == pytest.approx(6.0)


def test_a_spent_budget_still_times_one_point_a_stage() -> None:
    clock = FakeClock()
    budget = Budget(1.0, [3, 3, 3], clock=clock)
    runs = [list(budget.run(timed_points(clock, 3, 5.0))) for _ in range(3)]
    assert runs == [[0], [0], [0]]
    assert budget.eta_s(3) == 0.0


def test_eta_is_the_pace_times_the_points_left_within_the_budget() -> None:
    clock = FakeClock()
    budget = Budget(100.0, [4, 6], clock=clock)
    list(budget.run(timed_points(clock, 4, 2.0)))
    assert budget.eta_s(4) == pytest.approx(6 * 2.0)


def test_a_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="budget 0 s; allowed: more than 0 s"):
        Budget(0, [1])


def test_a_stage_that_measured_its_points_first_keeps_them_all() -> None:
    """The all-reduce times its sizes within its own share, then yields them: a spent
    budget must not drop any (`cut=False`), where a cut stage stops after its first."""
    clock = FakeClock()
    budget = Budget(1.0, [5, 5], clock=clock)
    assert len(list(budget.run(timed_points(clock, 5, 10.0)))) == 1
    assert len(list(budget.run(timed_points(clock, 5, 10.0), cut=False))) == 5
