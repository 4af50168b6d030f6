"""`collect`: time a model's kernels on this device and write a calibration file.

The run, in order: the memory copy and square GEMMs (peaks), the model's GEMMs in every
precision the device has, prefill and decode attention, the elementwise work, the
all-reduce (skipped with one device, and the skip recorded), then the fit
(`llmsizer.collect.fit`) and the end-to-end check (`llmsizer.collect.check`). The result
is a `perf.calibrated.CalibrationFile` that `predict`, `plan` and `simulate` accept as
`--calibration`, carrying its device (`device:`) and the summary of its timings; the raw
timings are returned for the CSV beside it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

import torch

from llmsizer.collect.check import CheckPoint, check_decode, median_abs_error_pct
from llmsizer.collect.device import Device, device_entry
from llmsizer.collect.fit import CollectedFit, Peaks, fit_factors, measured_peaks
from llmsizer.collect.kernels import (
    make_timer,
    precisions,
    time_copy,
    time_decode_attention,
    time_elementwise,
    time_gemms,
    time_prefill_attention,
    time_square_gemms,
)
from llmsizer.collect.shapes import Grid, check_supported, layer_gemms
from llmsizer.collect.timings import Timing
from llmsizer.perf.calibrated import CalibrationFile, ResidualSummary
from llmsizer.perf.efficiency import EnginePreset, default_efficiency
from llmsizer.specs import GpuSpec, ModelSpec, Precision
from llmsizer.specs.gpus import gpu_from_entry

Say = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Collected:
    """A collection's calibration file, raw timings and end-to-end check."""

    calibration: CalibrationFile
    timings: list[Timing]
    check: list[CheckPoint]


def model_gemm_precisions(device: Device, precision: str) -> tuple[str, ...]:
    """Precisions the model's GEMMs are timed in: BF16, FP8 where the device has it, and
    the factors' precision; FP16 gets square GEMMs only (its peak for the device entry)."""
    wanted = {"bf16", precision} | ({"fp8"} & set(precisions(device.torch_device)))
    return tuple(p for p in precisions(device.torch_device) if p in wanted)


def time_kernels(
    model: ModelSpec, grid: Grid, device: Device, precision: str, say: Say
) -> list[Timing]:
    """Every timing of the run (module docstring), reporting each kind as it finishes."""
    timer = make_timer(device.torch_device, grid.warmup, grid.repeats)
    gemms = layer_gemms(model)
    stages: list[tuple[str, Callable[[], Iterator[Timing]]]] = [
        ("copy", partial(time_copy, grid, timer))
    ]
    for p in precisions(device.torch_device):
        stages.append((f"{p} square GEMMs", partial(time_square_gemms, grid, p, timer)))
    for p in model_gemm_precisions(device, precision):
        stages.append((f"{p} model GEMMs", partial(time_gemms, gemms, grid, p, timer)))
    stages += [
        ("prefill attention", lambda: time_prefill_attention(model, grid, timer)),
        ("decode attention", lambda: time_decode_attention(model, grid, timer)),
        ("elementwise", lambda: time_elementwise(model, grid, timer)),
    ]
    timings: list[Timing] = []
    with torch.inference_mode():
        for i, (label, stage) in enumerate(stages, start=1):
            start = time.perf_counter()
            rows = list(stage())
            timings += rows
            say(
                f"[{i}/{len(stages)}] {label}: {len(rows)} timings, "
                f"{time.perf_counter() - start:.1f} s"
            )
    return timings


def allreduce_note(device: Device) -> str:
    """Why the all-reduce was not timed (the factors keep the engine's prior)."""
    if device.num_devices <= 1:
        return "skipped: one device, no all-reduce to time"
    return (
        f"skipped: {device.num_devices} GPUs present, but collect does not time "
        "all-reduces yet (torch.distributed across processes is not built)"
    )


def collect(
    model: ModelSpec,
    device: Device,
    grid: Grid,
    *,
    precision: str = "bf16",
    engine: EnginePreset = EnginePreset.VLLM,
    check: bool = True,
    say: Say | None = None,
) -> Collected:
    """Time, fit, check; the calibration file's factors are fractions of the device entry's
    peaks (the catalog's for a catalogued GPU, the measured ones otherwise)."""
    say = say or (lambda _: None)
    check_supported(model)
    Precision.parse(precision)  # a clear error for a name that is no precision
    if precision not in precisions(device.torch_device):
        allowed = ", ".join(precisions(device.torch_device))
        raise ValueError(
            f"precision {precision!r} is not timed on {device.name}; allowed: {allowed}"
        )
    started = datetime.now(UTC)
    timings = time_kernels(model, grid, device, precision, say)
    measured = measured_peaks(timings)
    entry = device_entry(device, measured, grid.copy_bytes)
    gpu = gpu_from_entry(device.name, entry)
    peaks = Peaks(
        {p: rate for p in measured.flops_per_s if (rate := _peak(gpu, p)) is not None},
        gpu.hbm_bytes_per_s,
    )
    fit = fit_factors(timings, peaks, precision)
    factors = default_efficiency(engine).replace(**fit.factors)
    say(f"all-reduce: {allreduce_note(device)}")
    check_layers = min(grid.check_layers, model.num_layers)
    points = (
        check_decode(
            model,
            gpu,
            factors,
            num_layers=check_layers,
            points=grid.check_points,
            timer=make_timer(device.torch_device, grid.warmup, grid.repeats),
            progress=say,
        )
        if check and precision == "bf16"
        else []
    )
    if check and precision != "bf16":
        say("decode check: skipped (the decode loop runs BF16; collect --precision bf16 checks)")
    calibration = CalibrationFile(
        kind="efficiency_factors",
        engine=engine,
        factors=fit.factors,
        fitted_on={
            **_provenance(model, device, grid, measured, fit, timings, started, precision, engine),
            **_check_summary(points, check_layers),
        },
        residuals={f"{kind}_seconds": _residual(fit, kind) for kind in fit.fits},
        device=entry,
    )
    return Collected(calibration, timings, points)


def _peak(gpu: GpuSpec, precision: str) -> float | None:
    return gpu.dense_flops_per_s(Precision.parse(precision))


def _residual(fit: CollectedFit, kind: str) -> ResidualSummary:
    f = fit.fits[kind]
    return ResidualSummary(
        num_rows=f.num_rows,
        median_ape_pct=round(f.median_ape_pct, 2),
        mean_ape_pct=round(f.mean_ape_pct, 2),
    )


def _provenance(
    model: ModelSpec,
    device: Device,
    grid: Grid,
    measured: Peaks,
    fit: CollectedFit,
    timings: list[Timing],
    started: datetime,
    precision: str,
    engine: EnginePreset,
) -> dict[str, Any]:
    """What the factors were measured on and how, for the file's `fitted_on`."""
    fitted = set(fit.factors)
    carried = [k for k in default_efficiency(engine).as_dict() if k not in fitted]
    info: dict[str, Any] = {
        "produced_by": "llmsizer collect",
        "collected_at": started.isoformat(timespec="seconds"),
        "device": device.name,
        "device_kind": "cpu" if device.is_cpu else "gpu",
        "peaks": "catalog datasheet" if device.catalog is not None else "measured on the device",
        "torch": torch.__version__,
        "model": model.name,
        "gemm_precision": precision,
        "num_timings": len(timings),
        "grid": {
            "gemm_tokens": list(grid.gemm_tokens),
            "prefill_lengths": list(grid.prefill_lengths),
            "decode_batches": list(grid.decode_batches),
            "decode_lengths": list(grid.decode_lengths),
            "repeats": grid.repeats,
            "warmup": grid.warmup,
        },
        "measured_peak_tflops": {p: round(v / 1e12, 4) for p, v in measured.flops_per_s.items()},
        "measured_peak_bandwidth_gb_s": round(measured.bytes_per_s / 1e9, 3),
        "intercepts_us": {k: round(f.intercept_s * 1e6, 2) for k, f in fit.fits.items()},
        "elementwise_bandwidth_efficiency": float(
            f"{fit.fits['elementwise'].bandwidth_efficiency:.4g}"
        ),
        "allreduce": allreduce_note(device),
        "fitted_factors": sorted(fitted),
        "carried_factors": carried,
        "carried_over": f"the {engine.value} priors: host step overhead, eager prefill "
        "launches and collectives are not kernel timings",
    }
    return info


def _check_summary(points: list[CheckPoint], layers: int) -> dict[str, Any]:
    """The end-to-end check for `fitted_on` (nothing when it did not run)."""
    if not points:
        return {}
    rows = [
        {
            "batch": p.batch,
            "context": p.context,
            "measured_ms": round(p.measured_s * 1e3, 4),
            "predicted_ms": round(p.predicted_s * 1e3, 4),
            "error_pct": round(p.error_pct, 2),
        }
        for p in points
    ]
    return {
        "decode_check": {
            "what": f"plain PyTorch decode loop, {layers} layers at the model's shapes, "
            "random weights, static KV cache; predicted without the host step overhead",
            "median_abs_error_pct": round(median_abs_error_pct(points), 2),
            "points": rows,
        }
    }
