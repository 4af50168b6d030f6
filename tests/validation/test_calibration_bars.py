"""Issue 3's bars on the calibration set, with the shipped (calibrated) factors.

- TensorRT-LLM offline throughput rows, FP8/BF16, H100/H200: median absolute error of the
  predicted output tokens/s at most 15 %.
- The online table (v0.14, TTFT and ITL at request rates): MdAPE at most 15 % for ITL and
  25 % for TTFT.

The full sets simulate ~340 rows (minutes: marked slow). The fast subsets, which run by
default, hold the same bars on cheap slices: the Llama 3.1 70B rows of the online table on
H100, and the offline rows with short outputs (2048/128, 5000/500).
"""

from collections.abc import Callable
from functools import cache

import pytest

from llmsizer.calibrate.measurements import Measurement, load_measurements
from llmsizer.calibrate.validation import (
    BARS,
    Bar,
    ValidationReport,
    is_bar_offline,
    is_online,
    shipped_factors,
    validate,
)
from tests.conftest import shared_path

CSV = shared_path("calibration", "measurements.csv")
pytestmark = pytest.mark.shared
OFFLINE, ITL, TTFT = BARS


@cache
def measurements() -> tuple[Measurement, ...]:
    return load_measurements(CSV).measurements


@cache
def report(select: Callable[[Measurement], bool], subset: str) -> ValidationReport:
    keep = SUBSETS[subset]
    chosen = [m for m in measurements() if select(m) and keep(m)]
    return validate(chosen, {"fitted": shipped_factors})  # each row by its runtime's fit


def median_ape(bar: Bar, subset: str) -> float:
    """The bar's MdAPE (%) over the rows `bar.select` keeps and `SUBSETS[subset]` too."""
    stats = report(bar.select, subset).stats("fitted", bar.group)
    assert stats is not None and stats.num_rows > 0
    return stats.median_ape_pct


SUBSETS = {
    "all": lambda m: True,
    "online-70b-h100": lambda m: m.spec.model == "llama-3.1-70b" and m.spec.gpu == "h100-sxm",
    "offline-short-outputs": lambda m: (m.spec.isl, m.spec.osl) in {(2048, 128), (5000, 500)},
}


def test_the_bar_selections_are_the_issues_rows():
    offline = [m for m in measurements() if is_bar_offline(m)]
    online = [m for m in measurements() if is_online(m)]
    assert {m.spec.gpu for m in offline} == {"h100-sxm", "h200-sxm"}
    assert {m.spec.precision for m in offline} <= {"fp8", "bf16"}
    assert all(m.spec.offline for m in offline) and len(offline) > 250
    assert len(online) == 72


@pytest.mark.parametrize("bar", [ITL, TTFT], ids=lambda b: b.group)
def test_online_bars_on_the_70b_h100_rows(bar):
    assert median_ape(bar, "online-70b-h100") <= bar.max_median_ape_pct


def test_offline_bar_on_the_short_output_rows():
    assert median_ape(OFFLINE, "offline-short-outputs") <= OFFLINE.max_median_ape_pct


@pytest.mark.slow
@pytest.mark.parametrize("bar", BARS, ids=lambda b: b.group)
def test_bars_on_the_full_sets(bar):
    assert median_ape(bar, "all") <= bar.max_median_ape_pct
