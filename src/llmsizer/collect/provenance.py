"""What a collection's calibration file says of itself: its `fitted_on` and `residuals`
(what was measured, on what, how, and how well the fits and the end-to-end check did)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import torch

from llmsizer.collect.check import CheckPoint, median_abs_error_pct
from llmsizer.collect.device import Device
from llmsizer.collect.fit import CollectedFit, Peaks, RooflineFit
from llmsizer.collect.shapes import Grid
from llmsizer.collect.timings import Timing
from llmsizer.perf.calibrated import ResidualSummary
from llmsizer.perf.efficiency import EnginePreset, default_efficiency
from llmsizer.specs import ModelSpec


def residual(f: RooflineFit) -> ResidualSummary:
    return ResidualSummary(
        num_rows=f.num_rows,
        median_ape_pct=round(f.median_ape_pct, 2),
        mean_ape_pct=round(f.mean_ape_pct, 2),
    )


def provenance(
    model: ModelSpec,
    device: Device,
    grid: Grid,
    measured: Peaks,
    fit: CollectedFit,
    factors: dict[str, float],
    timings: list[Timing],
    started: datetime,
    precision: str,
    engine: EnginePreset,
) -> dict[str, Any]:
    """What the `factors` were measured on and how, for the file's `fitted_on`."""
    carried = [k for k in default_efficiency(engine).as_dict() if k not in factors]
    return {
        "produced_by": "llmsizer collect",
        "collected_at": started.isoformat(timespec="seconds"),
        "device": device.name,
        "device_kind": "cpu" if device.is_cpu else "gpu",
        "peaks": "catalog datasheet" if device.catalog is not None else "measured on the device",
        "timed": "process CPU time or wall time (kernels.Timer)"
        if device.is_cpu
        else "CUDA graph replays between CUDA events (kernels.Timer)",
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
        "fitted_factors": sorted(factors),
        "carried_factors": carried,
        "carried_over": f"the {engine.value} priors: host step overhead and eager prefill "
        "launches are not kernel timings (nor the collectives, without an all-reduce)",
    }


def check_summary(points: list[CheckPoint], layers: int, skipped: str | None) -> dict[str, Any]:
    """The end-to-end checks for `fitted_on`: decode and prefill points, or why they did
    not run."""
    if skipped is not None:
        return {"decode_check": {"skipped": skipped}}
    loop = f"{layers} layers at the model's shapes, random weights"
    what = {
        "decode_check": f"plain PyTorch decode loop, {loop}, static KV cache; "
        "predicted without the host step overhead",
        "prefill_check": f"plain PyTorch prefill of whole prompts, {loop}, causal attention; "
        "predicted without the host step overhead",
    }
    summary: dict[str, Any] = {}
    for key, prompt in (("decode_check", False), ("prefill_check", True)):
        these = [p for p in points if p.prompt is prompt]
        if not these:
            continue
        rows = [
            {
                ("prompts" if prompt else "batch"): p.batch,
                ("prompt_tokens" if prompt else "context"): p.context,
                "measured_ms": round(p.measured_s * 1e3, 4),
                "predicted_ms": round(p.predicted_s * 1e3, 4),
                "error_pct": round(p.error_pct, 2),
            }
            for p in these
        ]
        summary[key] = {
            "what": what[key],
            "median_abs_error_pct": round(median_abs_error_pct(these), 2),
            "points": rows,
        }
    return summary
