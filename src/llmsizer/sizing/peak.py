"""The planning peak: from an average request rate, or from daily active users.

Requests from many independent users arrive as a Poisson process, so the number arriving in
a window of `window_s` seconds is Poisson with mean `average_rps * window_s`. The course
sizes for a high percentile of that count ("Peak Requests Per Second"):

    poisson_quantile(0.95, 64)  # 77: a mean of 64 req/s peaks at 77, +20 %
    poisson_quantile(0.95, 7)   # 12: small loads are relatively burstier, +71 %

Longer windows smooth the peak towards the average; the default window is one second, as in
the course.
"""

from __future__ import annotations

import math

import numpy as np

from llmsizer.units import HOUR

_SPREAD = 40.0  # standard deviations summed either side of the mean: the rest is < 1e-300


def poisson_quantile(q: float, mean: float) -> int:
    """The smallest count k with P(N <= k) >= q for N ~ Poisson(`mean`) (as
    `scipy.stats.poisson.ppf`), by exact sums of the probabilities.

    The sum covers `_SPREAD` standard deviations around the mean (the mass outside is far
    below float64's resolution). Terms are built in log space from the lowest count,
    log p_j = log p_(j-1) + log(mean) - log(j), so large means neither underflow nor overflow.
    Equal to scipy's on 5,600 (mean, q) pairs up to a mean of 5e6, but for 2 pairs above
    a mean of 3.5e6 where the float sum's rounding moves the answer by one count.
    """
    if not (math.isfinite(mean) and mean > 0):
        raise ValueError(f"Poisson mean must be a finite number > 0, got {mean}")
    if not 0 < q < 1:
        raise ValueError(f"quantile must be in (0, 1), got {q}")
    width = _SPREAD * math.sqrt(mean) + _SPREAD
    lo = max(0, math.floor(mean - width))
    hi = math.ceil(mean + width)
    counts = np.arange(lo, hi + 1, dtype=np.float64)
    log_first = -mean + lo * math.log(mean) - math.lgamma(lo + 1)
    steps = math.log(mean) - np.log(np.maximum(counts[1:], 1.0))
    log_p = log_first + np.concatenate(([0.0], np.cumsum(steps)))
    cdf = np.cumsum(np.exp(log_p))
    return lo + int(np.searchsorted(cdf, q, side="left"))


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
    count = float(poisson_quantile(percentile / 100.0, average_rps * window_s))
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
