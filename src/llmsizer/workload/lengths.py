"""Length distributions: how many prompt or output tokens each request has.

Every sampler draws all its values in one vectorised call on the `numpy.random.Generator`
passed in, and returns a read-only int64 array of token counts: continuous draws are rounded
to the nearest integer, then clipped to at least 1 and, when `max_tokens` is given, to at most
`max_tokens` (and always to at most `MAX_TOKENS`). Clipping moves mass to the bounds, so a
distribution with much of its mass below 1 (a normal with mean 10 and std 20) ends up with a
larger mean than asked for.
"""

from __future__ import annotations

import math

import numpy as np

from llmsizer.workload.core import read_only

MAX_TOKENS = 10_000_000
"""The longest prompt or output any input may ask for, in tokens: the longest context window
of a released model (Llama 4 Scout, 10M tokens, Meta's model card). A bound, so that a typo
such as 10**19 is an error naming the value rather than an int64 overflow or a run that never
ends."""


def fixed_lengths(num_requests: int, value: int, *, max_tokens: int | None = None) -> np.ndarray:
    """`value` tokens for every request."""
    _check_count(num_requests)
    return _as_lengths(np.full(num_requests, value, dtype=np.int64), max_tokens)


def uniform_lengths(
    num_requests: int,
    low: int,
    high: int,
    rng: np.random.Generator,
    *,
    max_tokens: int | None = None,
) -> np.ndarray:
    """Integers drawn uniformly from `low` to `high`, both included."""
    _check_count(num_requests)
    if not 1 <= low <= high:
        raise ValueError(f"uniform lengths need 1 <= low <= high, got low={low}, high={high}")
    return _as_lengths(rng.integers(low, high, size=num_requests, endpoint=True), max_tokens)


def normal_lengths(
    num_requests: int,
    mean: float,
    std: float,
    rng: np.random.Generator,
    *,
    max_tokens: int | None = None,
) -> np.ndarray:
    """Normal with the given `mean` and `std` in tokens, rounded and clipped to >= 1."""
    _check_count(num_requests)
    _check_moments("normal", mean, std)
    return _as_lengths(rng.normal(mean, std, size=num_requests), max_tokens)


def lognormal_lengths(
    num_requests: int,
    mean: float,
    std: float,
    rng: np.random.Generator,
    *,
    max_tokens: int | None = None,
) -> np.ndarray:
    """Log-normal whose *lengths* have the given `mean` and `std` in tokens (not the mean and
    std of their logarithm; see `lognormal_parameters`), rounded and clipped to >= 1."""
    _check_count(num_requests)
    _check_moments("lognormal", mean, std)
    mu, sigma = lognormal_parameters(mean, std)
    return _as_lengths(rng.lognormal(mu, sigma, size=num_requests), max_tokens)


def lognormal_parameters(mean: float, std: float) -> tuple[float, float]:
    """(mu, sigma) of the underlying normal for a log-normal with this `mean` and `std`.

    From the log-normal's moments, mean = exp(mu + sigma^2 / 2) and
    var = (exp(sigma^2) - 1) * mean^2 (Johnson, Kotz and Balakrishnan, "Continuous Univariate
    Distributions", vol. 1, ch. 14), inverted:
        sigma^2 = ln(1 + (std / mean)^2)
        mu      = ln(mean) - sigma^2 / 2
    The median is exp(mu), below the mean for any std > 0.
    """
    _check_moments("lognormal", mean, std)
    sigma_squared = math.log1p((std / mean) ** 2)
    return math.log(mean) - sigma_squared / 2, math.sqrt(sigma_squared)


def empirical_lengths(
    num_requests: int,
    values: np.ndarray,
    rng: np.random.Generator,
    *,
    max_tokens: int | None = None,
) -> np.ndarray:
    """Drawn with replacement from `values` (for instance one column of a trace).

    Each draw is independent of every other column; to keep a prompt paired with its own
    output length, draw row indices once and index both columns (`make_workload` does).
    """
    _check_count(num_requests)
    if values.ndim != 1 or values.shape[0] == 0:
        raise ValueError(f"empirical lengths need a non-empty 1-D array, got shape {values.shape}")
    rows = rng.integers(0, values.shape[0], size=num_requests)
    return _as_lengths(values[rows], max_tokens)


def cap_lengths(lengths: np.ndarray, max_tokens: int | None) -> np.ndarray:
    """`lengths` clipped to at most `max_tokens` (unchanged when it is `None`), read-only int64."""
    return _as_lengths(lengths, max_tokens)


def _as_lengths(draws: np.ndarray, max_tokens: int | None) -> np.ndarray:
    if max_tokens is not None and max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    if np.issubdtype(draws.dtype, np.floating):
        draws = np.rint(draws)
    upper = MAX_TOKENS if max_tokens is None else min(max_tokens, MAX_TOKENS)
    lengths = np.clip(draws, 1, upper).astype(np.int64, copy=False)
    return read_only(lengths)


def _check_count(num_requests: int) -> None:
    if num_requests < 0:
        raise ValueError(f"num_requests must be >= 0, got {num_requests}")


def _check_moments(kind: str, mean: float, std: float) -> None:
    if not (math.isfinite(mean) and mean > 0 and math.isfinite(std) and std >= 0):
        raise ValueError(
            f"{kind} lengths need a finite mean > 0 and std >= 0, got mean={mean}, std={std}"
        )
