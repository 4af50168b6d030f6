"""`RateSearch` on latency curves known exactly: it finds the threshold to its tolerance, it
is monotone in the limit even when the curve is not monotone in the rate, and a warm start
lands in the same bracket."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import pytest

from llmsizer.sizing.limits import Limits, Metric
from llmsizer.sizing.rate_search import GRID, RATE_TOLERANCE, RateSearch
from tests.sizing.fake_probe import CAPACITY, FakeProbe, queue


def bumpy(rate: float) -> float:
    """Not monotone in the rate: noise a finite run can show."""
    return queue(rate) * (1.0 + 0.3 * math.sin(7.0 * rate))


def run(curve: Callable[[float], float], limit_ms: float, **kw: Any) -> RateSearch:
    probe: Any = FakeProbe(curve)
    return RateSearch(probe, Limits(ttft_s=limit_ms / 1e3), **kw).run()


@pytest.mark.parametrize("limit_ms", [150.0, 300.0, 450.0, 1300.0])
def test_finds_the_threshold_to_its_tolerance(limit_ms: float) -> None:
    truth = CAPACITY * (1.0 - 100.0 / limit_ms)  # queue(truth) == limit
    search = run(queue, limit_ms)
    assert search.rate is not None and search.failed is not None
    assert search.rate <= truth < search.failed.offered_rate
    assert search.failed.offered_rate - search.rate <= RATE_TOLERANCE * search.rate
    assert search.binding() is Metric.TTFT


def test_never_above_95_percent_of_capacity() -> None:
    search = run(queue, 1e9)
    assert search.rate == pytest.approx(GRID[0] * CAPACITY)
    assert search.binding() == "throughput"


def test_a_limit_no_rate_meets_exhausts_the_grid() -> None:
    search = run(queue, 90.0)
    assert search.exhausted and search.rate is None
    assert search.upper_rate() == pytest.approx(GRID[-1] * CAPACITY)


def test_a_tighter_limit_never_gives_a_higher_rate_even_on_a_bumpy_curve() -> None:
    limits = [110.0 + 15.0 * i for i in range(60)]
    rates = [run(bumpy, limit).rate or 0.0 for limit in limits]
    assert all(b >= a for a, b in itertools.pairwise(rates))


@pytest.mark.parametrize("start", [0.05, 0.33, 0.6, 0.9, 0.99])
def test_a_warm_start_lands_in_the_same_bracket(start: float) -> None:
    cold = run(queue, 400.0)
    warm = run(queue, 400.0, start=start)
    assert warm.rate is not None and cold.rate is not None and warm.failed is not None
    assert warm.rate <= CAPACITY * 0.75 < warm.failed.offered_rate
    assert warm.rate == pytest.approx(cold.rate, rel=2 * RATE_TOLERANCE)


def test_a_warm_start_near_the_answer_needs_fewer_probes() -> None:
    cold: Any = FakeProbe(queue)
    RateSearch(cold, Limits(ttft_s=0.4)).run()
    warm: Any = FakeProbe(queue)
    RateSearch(warm, Limits(ttft_s=0.4), start=0.74).run()
    assert len(warm.rates) < len(cold.rates)


def test_offline_is_the_capacity_without_probes() -> None:
    probe: Any = FakeProbe(queue)
    search = RateSearch(probe, Limits(), online=False)
    assert search.done and search.rate == CAPACITY and probe.rates == []
    with pytest.raises(RuntimeError, match="done"):
        search.step()


def test_upper_rate_bounds_every_answer_as_the_search_goes() -> None:
    probe: Any = FakeProbe(queue)
    search = RateSearch(probe, Limits(ttft_s=0.25))
    bounds = [search.upper_rate()]
    while not search.done:
        search.step()
        bounds.append(search.upper_rate())
    assert all(b >= (search.rate or 0.0) for b in bounds)
    assert all(b <= a for a, b in itertools.pairwise(bounds))  # only falls
