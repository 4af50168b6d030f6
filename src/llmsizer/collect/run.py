"""`collect`: time a model's kernels on this device and write a calibration file.

The run, in order: the memory copy and square GEMMs (peaks), the model's GEMMs in every
precision the device has (the routed experts' grouped GEMMs with them for an MoE model),
prefill and decode attention (MLA's latent forms for an MLA model), the elementwise work,
the all-reduce over the devices present (`llmsizer.collect.allreduce`; skipped with one
device, and the skip recorded), then the fit (`llmsizer.collect.fit`) and the end-to-end
check (`llmsizer.collect.check`). The stages share a time budget
(`llmsizer.collect.budget`): each samples its sizes coarse to fine until its share is
spent, so a run takes the budget and one point a stage at most. The result is a
`perf.calibrated.CalibrationFile` that `predict`, `plan` and `simulate` accept as
`--calibration`, carrying its device (`device:`) and the summary of its timings; the raw
timings are returned for the CSV beside it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial

import torch

from llmsizer.collect.allreduce import AllReduceFit, fit_allreduce, time_allreduce
from llmsizer.collect.attention import time_decode_attention, time_prefill_attention
from llmsizer.collect.budget import Budget
from llmsizer.collect.check import CheckPoint, check_skipped, check_steps
from llmsizer.collect.device import Device, device_entry
from llmsizer.collect.fit import Peaks, fit_factors, measured_peaks
from llmsizer.collect.kernels import (
    make_timer,
    precisions,
    time_copy,
    time_elementwise,
    time_expert_gemms,
    time_gemms,
    time_square_gemms,
)
from llmsizer.collect.provenance import check_summary, provenance, residual
from llmsizer.collect.shapes import (
    Grid,
    check_supported,
    expert_gemms,
    gemm_launches_per_layer,
    layer_gemms,
)
from llmsizer.collect.timings import Timing
from llmsizer.perf.calibrated import CalibrationFile
from llmsizer.perf.efficiency import EnginePreset, default_efficiency
from llmsizer.perf.launches import layer_units
from llmsizer.specs import GpuSpec, ModelSpec, Precision
from llmsizer.specs.gpus import gpu_from_entry

Say = Callable[[str], None]
# (label, planned rows, the rows as they are timed)
Stage = tuple[str, int, Callable[[], Iterator[Timing]]]
ALLREDUCE = "all-reduce"  # its stage's label
DEFAULT_BUDGET_S = 300.0  # the "under 5 minutes on one GPU", by construction


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


def kernel_stages(
    model: ModelSpec,
    grid: Grid,
    device: Device,
    precision: str,
    until: Callable[[], float] | None = None,
) -> list[Stage]:
    """Every stage of the run (module docstring) with its planned rows; the timer's calls
    keep to `until` (`kernels.Timer`)."""
    timer = make_timer(device.torch_device, grid.warmup, grid.repeats, until)
    gemms, experts = layer_gemms(model), expert_gemms(model)
    tokens = len(grid.gemm_tokens)
    stages: list[Stage] = [("copy", 1, partial(time_copy, grid, timer))]
    for p in precisions(device.torch_device):
        square = partial(time_square_gemms, grid, p, timer)
        stages.append((f"{p} square GEMMs", len(grid.square_sizes), square))
    for p in model_gemm_precisions(device, precision):
        model_gemms = partial(time_gemms, gemms, grid, p, timer)
        stages.append((f"{p} model GEMMs", tokens * len(gemms), model_gemms))
        if experts and p != "fp8":
            expert = partial(time_expert_gemms, experts, grid, p, timer)
            stages.append((f"{p} expert GEMMs", tokens * len(experts), expert))
    decode_points = len(grid.decode_batches) * len(grid.decode_lengths)
    prefill = partial(time_prefill_attention, model, grid, timer)
    stages += [
        ("prefill attention", len(grid.prefill_lengths), prefill),
        ("decode attention", decode_points, partial(time_decode_attention, model, grid, timer)),
        ("elementwise", tokens, partial(time_elementwise, model, grid, timer)),
    ]
    return stages


def collect(
    model: ModelSpec,
    device: Device,
    grid: Grid,
    *,
    precision: str = "bf16",
    engine: EnginePreset = EnginePreset.VLLM,
    check: bool = True,
    num_devices: int | None = None,
    budget_s: float = DEFAULT_BUDGET_S,
    say: Say | None = None,
) -> Collected:
    """Time, fit, check within `budget_s` seconds (plus one point a stage); the all-reduce
    runs over `num_devices` (default: every GPU present; one CPU). The calibration file's
    factors are fractions of the device entry's peaks (the catalog's for a catalogued GPU,
    the measured ones otherwise)."""
    say = say or (lambda _: None)
    check_supported(model)
    Precision.parse(precision)  # a clear error for a name that is no precision
    if precision not in precisions(device.torch_device):
        allowed = ", ".join(precisions(device.torch_device))
        raise ValueError(
            f"precision {precision!r} is not timed on {device.name}; allowed: {allowed}"
        )
    ranks = _ranks(device, num_devices)
    started = datetime.now(UTC)
    stages = kernel_stages(model, grid, device, precision, lambda: budget.deadline)
    if ranks > 1:
        stages.append(_allreduce_stage(model, grid, device, ranks, lambda: budget.share_s()))
    check_layers = min(grid.check_layers, model.num_layers)
    skip = check_skipped(model, precision) if check else "not asked for (--no-check)"
    # the check's share: a decode step runs ~7 timed kernels' work a layer, so it weighs as
    # many rows a point (its decode points: counting the prefill's starved the stages on an H100)
    check_weight = 7 * check_layers * len(grid.check_points) if skip is None else 0
    budget = Budget(budget_s, [n for _, n, _ in stages] + [check_weight])
    timings = _run_stages(stages, budget, say)
    allreduce = fit_allreduce(timings) if ranks > 1 else None
    measured = measured_peaks(timings)
    entry = device_entry(device, measured, grid.copy_bytes, allreduce)
    gpu = gpu_from_entry(device.name, entry)
    peaks = Peaks(
        {p: rate for p in measured.flops_per_s if (rate := _peak(gpu, p)) is not None},
        gpu.hbm_bytes_per_s,
    )
    units_per_layer = layer_units(model) / model.num_layers
    fit = fit_factors(timings, peaks, precision, gemm_launches_per_layer(model), units_per_layer)
    factors = fit.factors | ({} if allreduce is None else allreduce.factors(gpu))
    note = allreduce_note(ranks, allreduce, gpu)
    say(f"all-reduce: {note}")
    points: list[CheckPoint] = []
    if skip is None:
        efficiency = default_efficiency(engine).replace(**factors)
        timer = make_timer(device.torch_device, grid.warmup, grid.repeats, lambda: budget.deadline)
        run = check_steps(
            model,
            gpu,
            efficiency,
            num_layers=check_layers,
            decode_points=grid.check_points,
            prefill_points=grid.prefill_check_points,
            timer=timer,
        )
        points = list(budget.run(_reported(run, say)))
    else:
        say(f"decode check: skipped ({skip})")
    say(f"collected in {budget.elapsed_s:.0f} s (budget {budget_s:.0f} s)")
    info = provenance(
        model, device, grid, measured, fit, factors, timings, started, precision, engine
    )
    info |= {"budget_s": budget_s, "elapsed_s": round(budget.elapsed_s, 1), "allreduce": note}
    if allreduce is not None:
        info["allreduce_fit"] = _allreduce_summary(allreduce, gpu)
    calibration = CalibrationFile(
        kind="efficiency_factors",
        engine=engine,
        factors=factors,
        fitted_on=info | check_summary(points, check_layers, skip),
        residuals={f"{kind}_seconds": residual(f) for kind, f in fit.fits.items()},
        device=entry,
    )
    return Collected(calibration, timings, points)


def _ranks(device: Device, num_devices: int | None) -> int:
    """The all-reduce's ranks: `num_devices`, by default every GPU present (one CPU)."""
    ranks = device.num_devices if num_devices is None else num_devices
    if ranks < 1:
        raise ValueError(f"--devices {ranks}; allowed: 1 or more")
    if not device.is_cpu and ranks > device.num_devices:
        raise ValueError(
            f"--devices {ranks}; allowed: 1 to the {device.num_devices} GPUs this machine has"
        )
    return ranks


def _reported(points: Iterator[CheckPoint], say: Say) -> Iterator[CheckPoint]:
    for point in points:
        what = (
            f"{point.batch} x {point.context}-token prefill"
            if point.prompt
            else f"batch {point.batch}, context {point.context}"
        )
        say(
            f"check: {what}: "
            f"{point.measured_s * 1e3:.2f} ms measured, {point.predicted_s * 1e3:.2f} ms "
            f"predicted ({point.error_pct:+.1f} %)"
        )
        yield point


def _run_stages(stages: list[Stage], budget: Budget, say: Say) -> list[Timing]:
    """Every stage's rows within the budget, with progress and an ETA after each."""
    timings: list[Timing] = []
    with torch.inference_mode():
        for i, (label, planned, stage) in enumerate(stages, start=1):
            start = budget.elapsed_s
            try:
                # the all-reduce keeps to its share itself (`time_allreduce(seconds=)`)
                rows = list(budget.run(stage(), cut=not label.startswith(ALLREDUCE)))
            except torch.OutOfMemoryError as e:
                first = str(e).split(".")[0]
                raise ValueError(f"{label}: the device ran out of memory ({first})") from None
            timings += rows
            say(
                f"[{i}/{len(stages)}] {label}: {len(rows)} of {planned} timings in "
                f"{budget.elapsed_s - start:.1f} s; {budget.elapsed_s:.0f} of "
                f"{budget.seconds:.0f} s, about {budget.eta_s(len(timings)):.0f} s left"
            )
    return timings


def _allreduce_stage(
    model: ModelSpec, grid: Grid, device: Device, ranks: int, share_s: Callable[[], float]
) -> Stage:
    def rows() -> Iterator[Timing]:
        yield from time_allreduce(
            ranks,
            model.hidden_size,
            grid.gemm_tokens,
            device_type=device.torch_device.type,
            warmup=grid.warmup,
            repeats=grid.repeats,
            seconds=share_s(),
        )

    return (f"{ALLREDUCE} over {ranks} devices", len(grid.gemm_tokens), rows)


def allreduce_note(ranks: int, fit: AllReduceFit | None, gpu: GpuSpec) -> str:
    """What the file says of the all-reduce: skipped (the factors keep the engine's prior)
    or what it was timed with."""
    if fit is None:
        return "skipped: one device, no all-reduce to time (the engine's prior is kept)"
    hops, link = fit.link(gpu)
    where = "GPUs" if fit.backend == "nccl" else "processes on the CPU"
    return (
        f"timed with {fit.backend} over {ranks} {where}: bus bandwidth "
        f"{fit.bus_bytes_per_s / 1e9:.3g} GB/s against a {link / 1e9:.3g} GB/s link, "
        f"latency {fit.latency_s * 1e6:.1f} us over {hops} hops"
    )


def _allreduce_summary(fit: AllReduceFit, gpu: GpuSpec) -> dict[str, float | int | str]:
    hops, link = fit.link(gpu)
    return {
        "backend": fit.backend,
        "ranks": fit.num_ranks,
        "bus_bandwidth_gb_s": float(f"{fit.bus_bytes_per_s / 1e9:.4g}"),
        "best_bus_bandwidth_gb_s": float(f"{fit.best_bus_bytes_per_s / 1e9:.4g}"),
        "link_gb_s": float(f"{link / 1e9:.4g}"),
        "latency_us": round(fit.latency_s * 1e6, 2),
        "hops": hops,
        "num_rows": fit.num_rows,
        "median_ape_pct": round(fit.median_ape_pct, 2),
    }


def _peak(gpu: GpuSpec, precision: str) -> float | None:
    return gpu.dense_flops_per_s(Precision.parse(precision))
