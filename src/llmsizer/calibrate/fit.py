"""Fitting efficiency factors to measured metrics of recorded schedules.

Each target is one measured metric of one recorded run (`ScheduleTrace`); the fit finds
the factors that minimise the squared log error over all targets,

    loss(e) = sum over targets t of log(replay(trace_t, e)[metric_t] / measured_t)^2,

so a 10 % miss costs the same on a 5 ms TTFT as on a 30 000 tok/s throughput. It searches
log-factor space within each factor's bounds (scipy's trust-region least squares; tens of
re-pricings of every trace, each a handful of numpy operations). With `prior_sigma`, each
fitted factor with a nonzero starting value also pays (log(f / f_start) / prior_sigma)^2:
a log-normal prior around the starting values that settles directions the data cannot
tell apart (per-layer overhead against weight-streaming speed, say) at the priors instead
of at an arbitrary edge. With `ties` (child -> parent, both fitted), a factor split from
another (`EfficiencyFactors.SPLIT_FROM`: the MoE grouped GEMM from the dense GEMMs) also
pays (log(child / parent) / tie_sigma)^2: it follows its parent unless the rows tell them
apart, so a fold without, say, a dense model keeps its dense GEMMs near its experts' (and
instead of the prior around its start, which would pull it from a parent the rows move).
`prior_sigma` may also name a sigma per factor (a factor it leaves out has no prior), and
`weights` scale each target's squared log error (a model with many rows then need not set
every factor: `llmsizer.calibrate.aic_prior`).

Schedules that depend on the clock (open-loop arrivals) are frozen in their traces, which
are then exact only near the factors they were recorded at. The caller names them
(`clock_dependent`) and passes `refresh`, which re-records them at given factors: the first
round fits the other traces alone (when there are any), and after each round the
clock-dependent ones are re-recorded and the fit repeated with all, until the factors move
less than 1 %.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from llmsizer.calibrate.replay import ScheduleTrace, replay
from llmsizer.errors import import_extra
from llmsizer.perf.calibrated import ResidualSummary
from llmsizer.perf.efficiency import EfficiencyFactors

_MIN_FRACTION = 1e-3  # the lowest value searched, as a fraction of a factor's upper bound
_SETTLED = 0.01  # stop re-recording once no factor moves by more than this (log units)

Target = tuple[int, str, float]  # (trace index, metric key, measured value)
Refresh = Callable[[EfficiencyFactors], Mapping[int, ScheduleTrace]]


@dataclass(frozen=True, slots=True)
class Residual:
    """One measured metric of one case against its prediction (units of the metric)."""

    case: int
    metric: str
    measured: float
    predicted: float

    @property
    def log_error(self) -> float:
        return math.log(self.predicted / self.measured)

    @property
    def ape_pct(self) -> float:
        """Absolute percentage error: 100 |predicted / measured - 1|."""
        return 100.0 * abs(self.predicted / self.measured - 1.0)


def summarize_residuals(residuals: Sequence[Residual]) -> dict[str, ResidualSummary]:
    """Per metric: rows, median and mean absolute percentage error."""
    out = {}
    for metric in sorted({r.metric for r in residuals}):
        ape = np.array([r.ape_pct for r in residuals if r.metric == metric])
        out[metric] = ResidualSummary(
            num_rows=int(ape.size),
            median_ape_pct=round(float(np.median(ape)), 2),
            mean_ape_pct=round(float(ape.mean()), 2),
        )
    return out


@dataclass(frozen=True, slots=True)
class FitResult:
    """Fitted factors, where the fit started, and every residual at the fitted factors."""

    factors: EfficiencyFactors
    start: EfficiencyFactors
    fitted: tuple[str, ...]
    residuals: tuple[Residual, ...]
    num_rounds: int
    num_evaluations: int

    def summary(self) -> dict[str, ResidualSummary]:
        return summarize_residuals(self.residuals)


def predictions(
    traces: Sequence[ScheduleTrace], targets: Sequence[Target], eff: EfficiencyFactors
) -> list[float]:
    """Each target's predicted value under `eff`; a metric a trace lacks is an error."""
    metrics: dict[int, dict[str, float]] = {}
    out = []
    for i, metric, _ in targets:
        if i not in metrics:
            metrics[i] = replay(traces[i], eff)
        if metric not in metrics[i]:
            known = ", ".join(sorted(metrics[i]))
            raise ValueError(f"case {i} predicts no {metric!r}; it predicts: {known}")
        out.append(metrics[i][metric])
    return out


def fit_factors(
    traces: Sequence[ScheduleTrace],
    targets: Sequence[Target],
    start: EfficiencyFactors,
    fit: Sequence[str],
    *,
    clock_dependent: Collection[int] = (),
    refresh: Refresh | None = None,
    max_rounds: int = 3,
    prior_sigma: float | Mapping[str, float] | None = None,
    robust_scale: float | None = None,
    weights: Sequence[float] | None = None,
    ties: Mapping[str, str] | None = None,
    tie_sigma: float = 0.2,
    progress: Callable[[str], None] | None = None,
) -> FitResult:
    """Fit the factors named in `fit` (the others stay as in `start`); module docstring.

    `robust_scale` (a log error, e.g. 0.3): residuals beyond it cost linearly instead of
    quadratically (scipy's `soft_l1` loss), so a few rows an unmodelled effect puts far off
    (a cold first wave, a scheduler cliff) do not drag the factors every other row needs.
    It softens the data's residuals only: the prior and the ties stay Gaussian, with the
    sigmas they state (scipy's `loss=` would soften them too, weakening a prior that a
    factor has left by more than `robust_scale` several times over).

    `weights` (one per target, > 0; None: all 1) multiply each target's squared log error
    (its residual by the square root): relative weights between targets, e.g. so that each
    model's rows weigh alike whatever their number.

    Residuals are computed on the traces as they stand after the last refresh, i.e. at the
    fitted factors when `refresh` re-records the `clock_dependent` traces.
    """
    bounds = EfficiencyFactors.bounds()
    unknown = set(fit) - set(bounds)
    if unknown:
        raise ValueError(f"unknown factors {sorted(unknown)}; known: {list(bounds)}")
    for i, metric, value in targets:
        if not value > 0:
            raise ValueError(f"case {i}: measured {metric} must be > 0, got {value!r}")
    traces = list(traces)
    exact = [t for t in targets if t[0] not in clock_dependent]
    if refresh is None or not clock_dependent or not exact:
        exact = list(targets)
    floor = np.array([max(bounds[n][0], _MIN_FRACTION * bounds[n][1]) for n in fit])
    low, high = np.log(floor), np.log([bounds[n][1] for n in fit])
    prior = np.array([start.value(n) for n in fit])
    sigmas = _sigmas(prior_sigma, fit)
    has_prior = (prior > 0) & np.isfinite(sigmas)
    weight = np.where(has_prior, 1.0 / sigmas, 0.0)
    if weights is not None and len(weights) != len(targets):
        raise ValueError(f"{len(weights)} weights for {len(targets)} targets")
    root_w: dict[tuple[int, str], float] = {}
    for (i, metric, _), w in zip(targets, weights or (), strict=False):
        if not w > 0:
            raise ValueError(f"case {i}: the weight of {metric} must be > 0, got {w!r}")
        root_w[(i, metric)] = math.sqrt(w)
    tied = [(fit.index(c), fit.index(p)) for c, p in (ties or {}).items() if {c, p} <= set(fit)]
    child = np.array([c for c, _ in tied], dtype=np.int64)
    parent = np.array([p for _, p in tied], dtype=np.int64)
    has_prior[child] = False  # a tied factor's prior is its parent, not its start
    factors = start
    say = progress or (lambda _: None)

    def at(x: np.ndarray) -> EfficiencyFactors:
        return factors.replace(**dict(zip(fit, np.exp(x).tolist(), strict=True)))

    def residuals(x: np.ndarray, using: Sequence[Target]) -> np.ndarray:
        measured = np.array([v for _, _, v in using])
        data = np.log(np.array(predictions(traces, using, at(x))) / measured)
        if robust_scale is not None:
            data = _soft_l1(data, robust_scale)
        if root_w:
            data = data * np.array([root_w[(i, m)] for i, m, _ in using])
        if tied:
            data = np.concatenate([data, (x[child] - x[parent]) / tie_sigma])
        if not has_prior.any():
            return data
        pulled = weight * (x - np.log(prior, where=has_prior, out=x.copy()))
        return np.concatenate([data, pulled[has_prior]])

    evaluations = rounds = 0
    for rounds in range(1, max_rounds + 1):
        using = exact if rounds == 1 else targets
        x0 = np.clip(np.log(np.maximum([factors.value(n) for n in fit], floor)), low, high)
        # scipy: ~0.5 s to import and 140 MB installed (extra `fit`), only when fitting
        scipy_optimize = import_extra("scipy.optimize", "fit", "fitting efficiency factors")
        solution = scipy_optimize.least_squares(
            residuals,
            x0,
            bounds=(low, high),
            xtol=1e-6,
            args=(using,),
        )
        evaluations += int(solution.nfev)
        moved = float(np.max(np.abs(solution.x - x0)))
        factors = at(solution.x)
        say(f"round {rounds}: cost {solution.cost:.4g}, largest log-factor move {moved:.3f}")
        if refresh is None or not clock_dependent:
            break
        for i, trace in refresh(factors).items():
            traces[i] = trace
        if moved < _SETTLED and len(using) == len(targets):
            break
    values = predictions(traces, targets, factors)
    return FitResult(
        factors=factors,
        start=start,
        fitted=tuple(fit),
        residuals=tuple(Residual(i, m, v, p) for (i, m, v), p in zip(targets, values, strict=True)),
        num_rounds=rounds,
        num_evaluations=evaluations,
    )


def _sigmas(prior_sigma: float | Mapping[str, float] | None, fit: Sequence[str]) -> np.ndarray:
    """The prior's sigma per fitted factor (log units); inf where it has none."""
    if prior_sigma is None:
        return np.full(len(fit), np.inf)
    if not isinstance(prior_sigma, Mapping):
        prior_sigma = dict.fromkeys(fit, prior_sigma)
    values = np.array([prior_sigma.get(n, np.inf) for n in fit], dtype=np.float64)
    if np.any(values <= 0):
        raise ValueError(f"prior sigmas must be > 0, got {dict(zip(fit, values, strict=True))}")
    return values


def _soft_l1(r: np.ndarray, scale: float) -> np.ndarray:
    """Residuals whose squares are scipy's `soft_l1` cost of `r` at `f_scale` = `scale`:
    r^2 near 0, 2 scale |r| far out, with r's sign (the optimiser sees a smooth function)."""
    cost = 2.0 * scale**2 * (np.sqrt(1.0 + (r / scale) ** 2) - 1.0)
    return np.sign(r) * np.sqrt(cost)
