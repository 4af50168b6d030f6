"""The planning peak and the course's business view, against the course's own numbers and
against Poisson theory."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llmsizer.sizing.peak import dau_average_rps, poisson_peak_rps, poisson_quantile, users_served


def test_the_course_poisson_peaks() -> None:
    assert poisson_peak_rps(64) == 77  # "77, 20% difference"
    assert poisson_peak_rps(7) == 12  # "12, 71% difference"


def test_the_peak_is_the_poisson_quantile_of_simulated_arrivals() -> None:
    counts = np.random.default_rng(0).poisson(64, 200_000)
    assert poisson_peak_rps(64, 95) == np.percentile(counts, 95, method="inverted_cdf")


def test_longer_windows_and_lower_percentiles_smooth_the_peak() -> None:
    one_s, ten_s = poisson_peak_rps(64, 95, 1.0), poisson_peak_rps(64, 95, 10.0)
    assert 64 < ten_s < one_s
    assert poisson_peak_rps(64, 50) <= poisson_peak_rps(64, 95) <= poisson_peak_rps(64, 99.9)


def test_daily_users_and_the_course_business_view() -> None:
    # "70.7 peak prompts per second per one DGX H100. That's 2M requests per working day
    # (8 hours). 3 requests per person -> 679k daily active users"
    assert users_served(70.7, 3, 8) == pytest.approx(679e3, rel=1e-3)
    assert dau_average_rps(679e3, 3, 8) == pytest.approx(70.7, rel=1e-3)


@pytest.mark.parametrize(
    ("args", "words"),
    [((0, 95, 1), "average_rps"), ((5, 100, 1), "percentile"), ((5, 95, 0), "window_s")],
)
def test_bad_peak_inputs_name_themselves(args: tuple[float, float, float], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        poisson_peak_rps(*args)


def test_bad_user_inputs_name_themselves() -> None:
    with pytest.raises(ValueError, match="working_hours"):
        dau_average_rps(10, 3, 25)
    with pytest.raises(ValueError, match="daily_active_users"):
        dau_average_rps(0, 3, 8)


# scipy.stats.poisson.ppf(q, mean), computed once with scipy 1.16
SCIPY_PPF = [
    (0.3, 0.5, 0), (0.3, 0.9, 1), (0.3, 0.999, 3), (1, 0.5, 1), (1, 0.95, 3), (1, 0.999, 5),
    (7, 0.5, 7), (7, 0.9, 10), (7, 0.95, 12), (7, 0.99, 14), (64, 0.5, 64), (64, 0.9, 74),
    (64, 0.95, 77), (64, 0.99, 83), (64, 0.999, 90), (100.5, 0.5, 100), (100.5, 0.95, 117),
    (1000, 0.9, 1041), (1000, 0.95, 1052), (1000, 0.999, 1099), (12345.6, 0.5, 12345),
    (12345.6, 0.99, 12605), (1e6, 0.5, 1000000), (1e6, 0.95, 1001645), (1e6, 0.999, 1003092),
]  # fmt: skip


@pytest.mark.parametrize(("mean", "q", "expected"), SCIPY_PPF)
def test_the_poisson_quantile_is_scipys(mean: float, q: float, expected: int) -> None:
    assert poisson_quantile(q, mean) == expected


def test_the_poisson_quantile_is_the_smallest_count_reaching_q() -> None:
    """Against the definition, by direct sums of exp(-m) m^k / k! for a small mean."""
    mean, cdf, term = 3.7, 0.0, math.exp(-3.7)
    cdfs = []
    for k in range(40):
        cdf += term
        cdfs.append(cdf)
        term *= mean / (k + 1)
    for q in (0.05, 0.5, 0.8, 0.95, 0.999999):
        k = poisson_quantile(q, mean)
        assert cdfs[k] >= q and (k == 0 or cdfs[k - 1] < q)
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="Poisson mean"):
            poisson_quantile(0.5, bad)
