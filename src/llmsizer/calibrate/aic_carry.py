"""What a GPU generation without rows of a kind of work gets for that kind: the value the
engine's generations that have such rows fitted (docs/aic_measurement.md section 50).

Each engine's AIC fits are per (engine, GPU generation), held near the engine's general fit
(`llmsizer.calibrate.aic_prior`), which `measurements.csv` sets: dense models, no speculation.
A factor of a kind of work that data has none of has no general value to fall back on, only
the general file's 0, which says "absent", not "measured to cost nothing". `CARRIED` names
them:

- `moe_first_token_delay_s`, the extra first-token hold of a model with routed experts
  (section 48): TensorRT-LLM's Blackwell fit 93.7 ms (DeepSeek-R1/V3), its Hopper fit
  88.9 ms (Qwen3-235B-A22B), two generations and two models within 5 %: the serving front
  end's, not the GPU's;
- `verify_sequence_overhead_s`, a speculative verify step's host time per sequence (SGLang's
  per-request Python after the verify pass, section 34): the host's, not the GPU's.

A fit whose training rows hold none of that kind does not fit it (`aic_fit.Recorded.fit`
drops it) and would price it at the general 0. Here it takes instead the mean of the values
the engine's other generation groups fitted *in the same fold* (`carried_values`): in leave
one GPU out, TensorRT-LLM's H100 fold (no Hopper row left, so the general fit) gets the
Blackwell fit's hold, which no H100 row informed; holding Qwen3-235B out of Hopper leaves a
dense model only, and the fold gets Blackwell's. The mean, not a geometric mean (both are
times, and a fit at the bound 0 must not erase the others) nor the group with most rows (a
row count says how many loads were swept, not how well the hold is known; the other
generation's fit is a measurement too). What ships does the same (`carried_calibration`,
`llmsizer.perf.calibrated`): a GPU of a generation without a fit of its own (A100, L40S
with TensorRT-LLM) gets the general file plus these means.

Not carried, though the general data holds none of them either: the routed experts' GEMM
fractions (`experts_compute_efficiency`; `experts_bandwidth_efficiency` is not fitted at
all) and the W4A16 experts' dequantisation (`experts_dequant_efficiency`) are fractions of
a generation's peak by kernels the engines pick per generation, and the fits disagree
across generations (vLLM's experts' GEMM: Hopper 0.55, Blackwell 0.17); the sparse
indexer's time (`indexer_overhead_s`) is one kernel's time on one GPU, and only SGLang's
Blackwell rows hold it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

import numpy as np

from llmsizer.calibrate.fit import FitResult
from llmsizer.calibrate.gpu_fit import shipped_value
from llmsizer.perf import EfficiencyFactors
from llmsizer.perf.calibrated import CalibrationFile, calibrated_efficiency
from llmsizer.perf.efficiency import EnginePreset

CARRIED = ("moe_first_token_delay_s", "verify_sequence_overhead_s")  # module docstring


def carried_values(fits: Iterable[FitResult]) -> dict[str, float]:
    """Each `CARRIED` factor's mean over those of `fits` that fitted it (`FitResult.fitted`);
    a factor none of them fitted is left out."""
    values: dict[str, list[float]] = {}
    for fit in fits:
        for name in CARRIED:
            if name in fit.fitted:
                values.setdefault(name, []).append(fit.factors.value(name))
    return {name: float(np.mean(v)) for name, v in values.items()}


def other_generations(
    fits: Mapping[tuple[str, str], FitResult], group: tuple[str, str]
) -> list[FitResult]:
    """The fits in `fits` of the (engine, architecture) `group`'s engine on other GPU
    generations."""
    return [f for g, f in fits.items() if g[0] == group[0] and g != group]


def with_carried(
    fit: FitResult | None, general: EfficiencyFactors, others: Iterable[FitResult]
) -> EfficiencyFactors:
    """`fit`'s factors (None: the engine's `general` fit, nothing fitted) with each
    `CARRIED` factor it did not fit set to the mean of the `others` that did (the engine's
    other generation groups, fitted without the same held-out rows); `others` is read only
    where some factor is missing, so it may be a lazy iterable of fits."""
    factors, fitted = (fit.factors, fit.fitted) if fit else (general, ())
    if all(name in fitted for name in CARRIED):
        return factors
    carried = {k: v for k, v in carried_values(others).items() if k not in fitted}
    return factors.replace(**carried) if carried else factors


def shipped_factors(
    fits: Mapping[tuple[str, str], FitResult], group: tuple[str, str]
) -> EfficiencyFactors:
    """What prices a row of the (engine, architecture) `group` once `fits` ship: its group's
    fit, else the engine's general fit, with what the engine's other generations carry."""
    general = calibrated_efficiency(group[0])
    return with_carried(fits.get(group), general, other_generations(fits, group))


def carried_fits(fits: Mapping[tuple[str, str], FitResult]) -> dict[tuple[str, str], FitResult]:
    """The group fits that ship, each with the `CARRIED` factors it did not fit taken from
    its engine's other generations among them (`with_carried`)."""
    return {
        group: dataclasses.replace(
            fit, factors=with_carried(fit, fit.factors, other_generations(fits, group))
        )
        for group, fit in fits.items()
    }


def carried_file(
    engine: str, fits: Mapping[tuple[str, str], FitResult], sha256: str
) -> CalibrationFile | None:
    """`perf/data/carried_<engine>.yaml`: what a generation without a fit of its own gets
    for the `CARRIED` factors (the mean of `engine`'s groups' values in `fits` as their files
    ship them, fitted on the AIC rows whose file has hash `sha256`), with where each came
    from; None where no group of `engine` fitted one."""
    own = {g[1]: f for g, f in fits.items() if g[0] == engine}
    values = carried_values(own.values())
    if not values:
        return None
    origin = {
        name: {a: shipped_value(f.factors.value(name)) for a, f in own.items() if name in f.fitted}
        for name in values
    }
    fitted_on = {
        "data": "shared/calibration/aic_silicon_calibration.csv",
        "sha256": sha256,
        "by": "bench/fit_aic.py --write",
        "rule": "the mean over the GPU generations whose rows fit it (calibrate.aic_carry)",
        "carried_from": origin,
    }
    return CalibrationFile(
        kind="efficiency_factors",
        engine=EnginePreset.parse(engine),
        factors={k: shipped_value(float(np.mean(list(origin[k].values())))) for k in values},
        fitted_on=fitted_on,
    )


def carried_provenance(
    group: tuple[str, str], fits: Mapping[tuple[str, str], FitResult]
) -> dict[str, object]:
    """What `group`'s shipped file says of the `CARRIED` factors its fit in `fits` took from
    its engine's other generations (none: {}), for `llmsizer gpus --factors`."""
    others = carried_values(other_generations(fits, group))
    names = [n for n in CARRIED if n not in fits[group].fitted and n in others]
    if not names:
        return {}
    note = "the mean of the engine's other GPU generations' fits (aic_carry)"
    return {"carried_factors": names, "carried_over": f"{', '.join(names)}: {note}"}
