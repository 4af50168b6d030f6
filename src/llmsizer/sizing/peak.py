"""The planning peak: from an average request rate, or from daily active users.

Requests from many independent users arrive as a Poisson process, so the number arriving in
a window of `window_s` seconds is Poisson with mean `average_rps * window_s`. The course
sizes for a high percentile of that count ("Peak Requests Per Second"):

    scipy.stats.poisson.ppf(0.95, 64)  # 77: a mean of 64 req/s peaks at 77, +20 %
    scipy.stats.poisson.ppf(0.95, 7)   # 12: small loads are relatively burstier, +71 %

Longer windows smooth the peak towards the average; the default window is one second, as in
the course.
"""

from __future__ import annotations

from scipy.stats import poisson

from llmsizer.units import HOUR


def poisson_peak_rps(average_rps: float, percentile: float = 95.0, window_s: float = 1.0) -> float:
    """The `percentile` (0-100) of requests per `window_s` seconds, per second.

    `poisson_peak_rps(64) == 77.0`, as in the course.
    """
    if not average_rps > 0:
        raise ValueError(f"average_rps must be > 0, got {average_rps}")
    if not 0 < percentile < 100:
        raise ValueError(f"percentile must be in (0, 100), got {percentile}")
    if not window_s > 0:
        raise ValueError(f"window_s must be > 0, got {window_s}")
    count = float(poisson.ppf(percentile / 100.0, average_rps * window_s))
    return max(count, 1.0) / window_s


def dau_average_rps(
    daily_active_users: float, requests_per_user: float = 3.0, working_hours: float = 8.0
) -> float:
    """Average req/s when every user sends `requests_per_user` requests a day, spread evenly
    over `working_hours` (the course's business view, read backwards)."""
    if not daily_active_users > 0 or not requests_per_user > 0:
        raise ValueError(
            f"daily_active_users and requests_per_user must be > 0, got "
            f"{daily_active_users} and {requests_per_user}"
        )
    if not 0 < working_hours <= 24:
        raise ValueError(f"working_hours must be in (0, 24], got {working_hours}")
    return daily_active_users * requests_per_user / (working_hours * HOUR)


def users_served(rps: float, requests_per_user: float = 3.0, working_hours: float = 8.0) -> float:
    """Daily active users a sustained `rps` serves (the course: 70.7 req/s for 8 hours is
    2.0 M requests, 679 k users at 3 requests each)."""
    return rps * working_hours * HOUR / requests_per_user
