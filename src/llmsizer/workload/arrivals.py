"""Arrival processes: when each request of an open-loop workload arrives, in seconds.

Every process starts with a request at t = 0, as `vllm bench serve` sends its first request
at once and then sleeps one gap before each next one; the `num_requests - 1` gaps that follow
are independent draws, all in one vectorised call on the `numpy.random.Generator` passed in.
The result is a read-only, non-decreasing float64 array.

A closed loop (fixed concurrency) has no arrival times: see `Workload.concurrency`.
"""

from __future__ import annotations

import math

import numpy as np

from llmsizer.workload.core import read_only


def burst_arrivals(num_requests: int) -> np.ndarray:
    """Every request at t = 0 (vLLM's `--request-rate inf`)."""
    _check_count(num_requests)
    return read_only(np.zeros(num_requests, dtype=np.float64))


def poisson_arrivals(num_requests: int, rate_per_s: float, rng: np.random.Generator) -> np.ndarray:
    """A Poisson process at `rate_per_s`: gaps exponential with mean 1 / rate, CV 1."""
    _check_count(num_requests)
    _check_rate(rate_per_s)
    gaps_s = rng.exponential(1.0 / rate_per_s, size=max(num_requests - 1, 0))
    return _from_gaps(num_requests, gaps_s)


def gamma_arrivals(
    num_requests: int, rate_per_s: float, burstiness: float, rng: np.random.Generator
) -> np.ndarray:
    """Gamma-distributed gaps with mean 1 / `rate_per_s`, vLLM's `--burstiness` semantics.

    shape k = burstiness, scale theta = 1 / (rate * burstiness), so that
        mean gap = k * theta       = 1 / rate
        CV       = 1 / sqrt(k)
    burstiness 1 is a Poisson process, below 1 burstier, above 1 more regular
    (vLLM `benchmarks/serve.py`, `get_request`).
    """
    _check_count(num_requests)
    _check_rate(rate_per_s)
    if not (math.isfinite(burstiness) and burstiness > 0):
        raise ValueError(f"burstiness must be a finite number > 0, got {burstiness}")
    scale_s = 1.0 / (rate_per_s * burstiness)
    gaps_s = rng.gamma(burstiness, scale_s, size=max(num_requests - 1, 0))
    return _from_gaps(num_requests, gaps_s)


def _from_gaps(num_requests: int, gaps_s: np.ndarray) -> np.ndarray:
    """Arrival times: 0, then the running sum of the `num_requests - 1` gaps."""
    arrival_s = np.zeros(num_requests, dtype=np.float64)
    np.cumsum(gaps_s, out=arrival_s[1:])
    return read_only(arrival_s)


def _check_count(num_requests: int) -> None:
    if num_requests < 0:
        raise ValueError(f"num_requests must be >= 0, got {num_requests}")


def _check_rate(rate_per_s: float) -> None:
    if not (math.isfinite(rate_per_s) and rate_per_s > 0):
        raise ValueError(
            f"request rate must be a finite number of requests/s > 0, got {rate_per_s} "
            "(use burst arrivals for all requests at once)"
        )
