"""`ProbeCache`: a plan with cached probes equals a plan without them, whatever came before,
and a second plan with another limit reuses the first one's simulations."""

from __future__ import annotations

from typing import Any

import pytest

from llmsizer.sizing.plan import plan
from llmsizer.sizing.plan_data import plan_data
from llmsizer.sizing.probe_cache import ProbeCache
from llmsizer.sizing.usecase import UseCase

FAST: dict[str, Any] = {
    "model": "llama-3-8b",
    "input": {"user": 2000},
    "output": 200,
    "load": {"peak_rps": 50},
    "limits": {"ttft_ms": 300},
    "candidates": {"gpus": ["h100-sxm"], "tensor_parallel_sizes": [1, 2]},
    "search": {"num_requests": 400, "curves": False, "uncertainty": 0.0},
}


def usecase(ttft_ms: float, percentile: float = 95.0) -> UseCase:
    return UseCase.model_validate(
        {**FAST, "limits": {"ttft_ms": ttft_ms, "percentile": percentile}}
    )


def test_cached_plans_equal_fresh_plans_in_any_order() -> None:
    cache = ProbeCache()
    for ttft_ms in (300, 150, 600, 300):
        cached = plan_data(plan(usecase(ttft_ms), probes=cache))
        fresh = plan_data(plan(usecase(ttft_ms)))
        assert cached == fresh, ttft_ms


def test_a_limit_change_reuses_every_probe() -> None:
    cache = ProbeCache()
    plan(usecase(300), probes=cache, quick=True)  # the search only: one probe per config
    built = cache.misses
    assert built > 0 and len(cache) == built
    plan(usecase(200), probes=cache, quick=True)
    assert cache.misses == built  # same configurations, lengths, percentiles: all hits
    assert cache.hits > 0


def test_a_quick_plan_has_the_same_answer_without_band_or_timeline() -> None:
    cache = ProbeCache()
    quick = plan_data(plan(usecase(300), probes=cache, quick=True))
    full = plan_data(plan(usecase(300), probes=cache))
    assert quick["candidates"] == full["candidates"]
    assert quick["band"] is None and quick["timeline"] is None
    assert full["timeline"] is not None


def test_another_percentile_is_another_probe() -> None:
    cache = ProbeCache()
    plan(usecase(300), probes=cache, quick=True)
    built = cache.misses
    plan(
        usecase(300, percentile=99), probes=cache, quick=True
    )  # summaries report other percentiles
    assert cache.misses == 2 * built


def test_the_cache_drops_the_least_recently_used() -> None:
    cache = ProbeCache(max_probes=1)
    plan(usecase(300), probes=cache)
    assert len(cache) == 1
    with pytest.raises(ValueError, match="max_probes must be >= 1, got 0"):
        ProbeCache(max_probes=0)
