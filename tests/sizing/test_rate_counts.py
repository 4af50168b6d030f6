"""`RateSearch` in instance counts (`rate_search.Counts`, the lever table's searches) on a
latency curve known exactly: every probe is the lowest rate of a count, the count found is
the fewest the curve allows, and a search that cannot beat an incumbent ends after one
probe at the lowest rate that would have."""

from __future__ import annotations

import math
from typing import Any

import pytest

from llmsizer.instance import DeploymentSpec
from llmsizer.sizing.configuration import Sizing
from llmsizer.sizing.limits import Limits
from llmsizer.sizing.rate_search import GRID, Counts, RateSearch
from llmsizer.sizing.servers import server_for
from tests.sizing.fake_probe import CAPACITY, FakeProbe, queue


def fewest(load: float, limit_ms: float) -> int:
    """Instances the queue curve needs at `load`: the best rate is its threshold, at most
    the grid's top."""
    best = min(CAPACITY * (1.0 - 100.0 / limit_ms), GRID[0] * CAPACITY)
    return math.ceil(load / best - 1e-9)


def search(load: float, limit_ms: float) -> tuple[RateSearch, FakeProbe]:
    probe = FakeProbe(queue)
    probe_any: Any = probe
    rs = RateSearch(probe_any, Limits(ttft_s=limit_ms / 1e3), counts=Counts(load))
    return rs, probe


def is_a_count_lowest_rate(load: float, rate: float) -> bool:
    n = load / rate
    return abs(n - round(n)) < 1e-9


@pytest.mark.parametrize("load", [7.0, 23.0, 61.0])
@pytest.mark.parametrize("limit_ms", [150.0, 300.0, 1300.0])
def test_counts_find_the_fewest_instances_probing_count_rates(load: float, limit_ms: float) -> None:
    rs, probe = search(load, limit_ms)
    rs.run()
    assert rs.rate is not None
    counts = Counts(load)
    assert counts.of(rs.rate) == fewest(load, limit_ms)
    assert rs.rate == pytest.approx(load / fewest(load, limit_ms))  # the count's lowest rate
    assert all(is_a_count_lowest_rate(load, r) for r in probe.rates), probe.rates
    assert queue(rs.rate) <= limit_ms


@pytest.mark.parametrize("limit_ms", [150.0, 200.0, 300.0])  # fewer instances fit the grid
def test_an_incumbent_it_cannot_beat_ends_the_search_after_one_probe(limit_ms: float) -> None:
    load = 23.0
    counts = Counts(load)
    best = fewest(load, limit_ms)
    rs, probe = search(load, limit_ms)
    rs.step(lambda rate: counts.of(rate) < best)  # the incumbent needs what the truth needs
    assert probe.rates == [pytest.approx(load / (best - 1))]  # the lowest rate that beats it
    assert rs.rate is None
    assert counts.of(rs.upper_rate()) >= best  # the branch and bound's drop


@pytest.mark.parametrize("limit_ms", [150.0, 300.0, 1300.0])
def test_an_incumbent_it_beats_walks_up_to_the_same_count(limit_ms: float) -> None:
    load = 23.0
    counts = Counts(load)
    rs, probe = search(load, limit_ms)
    rs.step(lambda rate: counts.of(rate) < fewest(load, limit_ms) + 3)
    assert rs.rate is not None  # the lowest rate that beats the incumbent passes
    rs.run()
    assert rs.rate is not None and counts.of(rs.rate) == fewest(load, limit_ms)
    assert all(is_a_count_lowest_rate(load, r) for r in probe.rates)


def test_counts_match_sizing() -> None:
    spec = DeploymentSpec(model="llama-3-8b", gpu="h100-sxm", tensor_parallel_size=2)
    counts = Counts(31.0)
    for rate in (0.1, 0.3, 1.0, 31.0 / 7, 31.0 / 7 * (1 - 1e-12), 40.0):
        sizing = Sizing.of(31.0, rate, spec, server_for("h100-sxm"))
        assert counts.of(rate) == sizing.num_instances
        assert counts.snapped(rate) <= rate * (1 + 1e-9)  # up to `of`'s rounding
        assert Sizing.of(31.0, counts.snapped(rate), spec, server_for("h100-sxm")) == sizing
