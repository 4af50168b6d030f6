"""The planning peak and the course's business view, against the course's own numbers and
against Poisson theory."""

from __future__ import annotations

import numpy as np
import pytest

from llmsizer.sizing.peak import dau_average_rps, poisson_peak_rps, users_served


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
