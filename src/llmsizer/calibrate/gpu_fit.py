"""Fitting the GPU model's efficiency factors to measured cases, and their calibration file.

`fit_efficiency` finds the factors that minimise the squared log error of `predict` over
every measured metric of every case (`llmsizer.calibrate.fit`), re-pricing recorded
schedules (`llmsizer.calibrate.record`). Open-loop (Poisson) cases are re-simulated after
each round and the fit repeated until the factors settle, so the residuals reported are
those of simulations at the fitted factors: what `predict` returns. `calibration_file`
writes a fit in the format `llmsizer.perf.calibrated.load_calibration` reads back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from llmsizer.calibrate.fit import FitResult, Target, fit_factors
from llmsizer.calibrate.record import Case, record_traces
from llmsizer.calibrate.replay import ScheduleTrace
from llmsizer.perf import EfficiencyFactors
from llmsizer.perf.calibrated import CalibrationFile
from llmsizer.perf.efficiency import EnginePreset
from llmsizer.sweep import Sweep

LATENCY_METRICS = frozenset({"mean_ttft_ms", "mean_tpot_ms", "mean_itl_ms"})
DEFAULT_FIT_FACTORS = (
    "gemm_compute_efficiency",
    "gemm_bandwidth_efficiency",
    "attention_compute_efficiency",
    "attention_bandwidth_efficiency",
    "layer_overhead_s",
    "prefill_layer_overhead_s",
    "step_overhead_s",
)
# The shipped fit's log-normal prior around the priors (a factor 1.65 is one sigma), against
# ~900 log-error residuals: it settles the directions the data leaves open.
PRIOR_SIGMA = 0.5


def fit_efficiency(
    cases: Sequence[Case],
    start: EfficiencyFactors,
    *,
    fit: Sequence[str] = DEFAULT_FIT_FACTORS,
    max_rounds: int = 3,
    prior_sigma: float | None = None,
    workers: int | Sweep = 1,
    progress: Callable[[str], None] | None = None,
) -> FitResult:
    """Fit the factors named in `fit` (the others stay as in `start`) to `cases`.

    Residuals (`FitResult.residuals`, indexed by case) are at the fitted factors. Up to
    `max_rounds` rounds re-simulate the open-loop cases; `workers` processes (or a `Sweep`,
    `llmsizer.sweep`) simulate; with `prior_sigma` (None: off) each fitted factor adds the residual
    log(f / f_start) / prior_sigma beside the data's log errors (`llmsizer.calibrate.fit`), so
    with a handful of cases the prior dominates, with hundreds it only settles what they
    leave open.
    """
    specs = [spec for spec, _ in cases]
    targets: list[Target] = [
        (i, metric, float(value))
        for i, (_, measured) in enumerate(cases)
        for metric, value in measured.items()
    ]
    latencies = [bool(LATENCY_METRICS & set(measured)) for _, measured in cases]
    open_loop = [i for i, s in enumerate(specs) if s.request_rate is not None]
    say = progress or (lambda _: None)
    say(f"simulating {len(specs)} cases ({len(open_loop)} open-loop)")
    traces = record_traces(specs, start, latencies, workers)

    def refresh(factors: EfficiencyFactors) -> dict[int, ScheduleTrace]:
        say(f"re-simulating {len(open_loop)} open-loop cases")
        fresh = record_traces(
            [specs[i] for i in open_loop], factors, [latencies[i] for i in open_loop], workers
        )
        return dict(zip(open_loop, fresh, strict=True))

    return fit_factors(
        traces,
        targets,
        start,
        fit,
        clock_dependent=open_loop,
        refresh=refresh,
        max_rounds=max_rounds,
        prior_sigma=prior_sigma,
        progress=say,
    )


def shipped_value(value: float) -> float:
    """A factor as a calibration file ships it: 4 significant digits (`calibration_file`)."""
    return float(f"{value:.4g}")


def calibration_file(
    result: FitResult, engine: EnginePreset | str, fitted_on: Mapping[str, Any]
) -> CalibrationFile:
    """The calibration file of a fit that started from `engine`'s priors (factors rounded
    to 4 significant digits, well inside what the data can tell apart)."""
    return CalibrationFile(
        kind="efficiency_factors",
        engine=EnginePreset.parse(engine),
        factors={k: shipped_value(v) for k, v in result.factors.as_dict().items()},
        fitted_on={**fitted_on, "fitted_factors": list(result.fitted)},
        residuals=result.summary(),
    )
