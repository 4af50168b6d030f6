"""From timings to efficiency factors: the roofline the performance model uses, fitted.

The model prices a kernel as `max(flops / (F e_c), bytes / (B e_b))` (`perf.step`), with F
and B the device's peaks; a real kernel also pays a fixed time per launch. For each kind
of work `fit_roofline` finds e_c, e_b in (0, 1] and an intercept o >= 0 that minimise
the squared log error of

    predicted = max(flops / (F e_c), bytes / (B e_b)) + o

over its timings (a grid search: three parameters, a few hundred rows). The efficiency
factors are e_c, e_b of the GEMMs and of attention (prefill and decode together: prefill
fixes e_c, decode fixes e_b). MLA's absorbed decode is timed but not fitted, and its e_b
keeps the engine's prior: engines run it in FlashMLA / FlashInfer's MLA kernels, which
PyTorch lacks; its generic SDPA reached 0.15-0.20 of an H100's bandwidth where FlashMLA's
README reports 3000 GB/s on an H800 SXM5 (0.9 of 3.35 TB/s), so the factor would describe
PyTorch, not the engine. `layer_overhead_s` is the intercepts of one layer's kernels
(its GEMMs, four in a dense layer; one attention; the elementwise work). The collectives'
factors come from the all-reduce's own fit (`llmsizer.collect.allreduce`) when there was
one; the rest (host step overhead, eager prefill launches) are the engine's priors: a
kernel timing cannot see them.

Peaks: a device in the GPU catalog is priced at its datasheet peaks, so the factors are
fractions of those. Any other device (a CPU, an uncatalogued GPU) is priced at its
measured peaks: for each precision the best rate of any GEMM timed (square or the model's),
for bandwidth the best of the memory copy and every memory-bound kernel timed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from llmsizer.collect.timings import Kind, Timing

_EFFICIENCIES = np.geomspace(1.0, 0.002, 160)  # descending: ties keep the higher value
_NUM_INTERCEPTS = 24
MAX_LAYER_OVERHEAD_S = 500e-6  # EfficiencyFactors.bounds()["layer_overhead_s"]
LATENT_DECODE = "sdpa_decode_latent"  # MLA's absorbed decode attention (collect.attention)


@dataclass(frozen=True, slots=True)
class RooflineFit:
    """e_c, e_b, the intercept in seconds, and how well they fit (module docstring)."""

    compute_efficiency: float
    bandwidth_efficiency: float
    intercept_s: float
    num_rows: int
    median_ape_pct: float
    mean_ape_pct: float


@dataclass(frozen=True, slots=True)
class Peaks:
    """A device's peaks: FLOP/s by precision name, and memory bytes/s."""

    flops_per_s: dict[str, float]
    bytes_per_s: float


def fit_roofline(rows: list[Timing], flops_per_s: float, bytes_per_s: float) -> RooflineFit:
    """The (e_c, e_b, o) of the module docstring for `rows` at peaks F, B: a coarse grid,
    then a fine one around its best point."""
    if not rows:
        raise ValueError("no timings to fit")
    flops = np.array([r.flops for r in rows]) / flops_per_s  # seconds at peak
    bytes_ = np.array([r.bytes for r in rows]) / bytes_per_s
    seconds = np.array([r.seconds for r in rows])
    o_step = float(seconds.min()) / _NUM_INTERCEPTS
    intercepts = np.arange(_NUM_INTERCEPTS) * o_step
    e_c, e_b, o = _search(flops, bytes_, seconds, _EFFICIENCIES, _EFFICIENCIES, intercepts)
    step = _EFFICIENCIES[0] / _EFFICIENCIES[1]  # one coarse step, as a ratio

    def around(e: float) -> np.ndarray:
        return np.geomspace(min(1.0, e * step), e / step, 21)

    fine = np.linspace(max(0.0, o - o_step), o + o_step, 21)
    e_c, e_b, o = _search(flops, bytes_, seconds, around(e_c), around(e_b), fine)
    predicted = np.maximum(flops / e_c, bytes_ / e_b) + o
    ape = np.abs(predicted - seconds) / seconds * 100
    return RooflineFit(
        compute_efficiency=e_c,
        bandwidth_efficiency=e_b,
        intercept_s=o,
        num_rows=len(rows),
        median_ape_pct=float(np.median(ape)),
        mean_ape_pct=float(np.mean(ape)),
    )


def _search(
    compute_s: np.ndarray,
    memory_s: np.ndarray,
    seconds: np.ndarray,
    compute_grid: np.ndarray,
    memory_grid: np.ndarray,
    intercepts: np.ndarray,
) -> tuple[float, float, float]:
    """The grid point of least squared log error; grids run from high to low efficiency,
    so among equal losses the highest efficiency wins (a bound the data never reaches)."""
    compute = compute_s[None, :] / compute_grid[:, None]  # (e_c, row)
    memory = memory_s[None, :] / memory_grid[:, None]  # (e_b, row)
    roof = np.maximum(compute[:, None, :], memory[None, :, :])  # (e_c, e_b, row)
    best = (math.inf, 0.0, 0.0, 0.0)
    for o in intercepts:
        loss = (np.log((roof + o) / seconds) ** 2).sum(axis=2)
        ic, ib = (int(n) for n in np.unravel_index(int(np.argmin(loss)), loss.shape))
        if loss[ic, ib] < best[0] - 1e-12:
            best = (float(loss[ic, ib]), float(compute_grid[ic]), float(memory_grid[ib]), float(o))
    return best[1], best[2], best[3]


def measured_peaks(timings: Iterable[Timing]) -> Peaks:
    """The best GEMM rate per precision and the best bandwidth of any memory-bound kernel
    or copy (module docstring); a ValueError if there is no GEMM or copy timing."""
    timings = list(timings)
    flops: dict[str, float] = {}
    for t in timings:
        if t.kind in (Kind.GEMM, Kind.SQUARE_GEMM, Kind.EXPERT_GEMM):
            flops[t.precision] = max(flops.get(t.precision, 0.0), t.flops_per_s)
    bandwidth = [
        t.bytes_per_s
        for t in timings
        if t.kind in (Kind.COPY, Kind.ELEMENTWISE, Kind.DECODE_ATTENTION)
        or (t.kind is Kind.GEMM and t.tokens == 1)
    ]
    if not flops or not bandwidth:
        raise ValueError("measured peaks need GEMM and copy timings")
    return Peaks(flops, max(bandwidth))


@dataclass(frozen=True, slots=True)
class CollectedFit:
    """The factors for the calibration file and the fits they came from, by kind."""

    factors: dict[str, float]
    fits: dict[str, RooflineFit]


def fit_factors(
    timings: list[Timing],
    peaks: Peaks,
    precision: str,
    gemm_launches_per_layer: float = 4.0,
    units_per_layer: float = 1.0,
) -> CollectedFit:
    """Efficiency factors for GEMMs in `precision` (the routed experts' grouped GEMMs with
    them: the model prices both at the same rates) and 16-bit attention at `peaks`; a layer
    launches `gemm_launches_per_layer` GEMMs (`shapes.gemm_launches_per_layer`) and runs
    `units_per_layer` dense layers' kernels (`perf.launches.layer_units` over the layers):
    `layer_overhead_s` is a dense layer's, so one layer's intercepts are divided by it."""
    gemm_kinds = (Kind.GEMM, Kind.EXPERT_GEMM)
    gemms = [t for t in timings if t.kind in gemm_kinds and t.precision == precision]
    attention = [t for t in timings if t.kind in (Kind.PREFILL_ATTENTION, Kind.DECODE_ATTENTION)]
    latent = any(t.name == LATENT_DECODE for t in attention)  # MLA (module docstring)
    attention = [t for t in attention if t.name != LATENT_DECODE]
    elementwise = [t for t in timings if t.kind is Kind.ELEMENTWISE]
    if precision not in peaks.flops_per_s:
        raise ValueError(
            f"no {precision} peak: this device's precisions are {list(peaks.flops_per_s)}"
        )
    bf16 = peaks.flops_per_s["bf16"]
    fits = {
        "gemm": fit_roofline(gemms, peaks.flops_per_s[precision], peaks.bytes_per_s),
        "attention": fit_roofline(attention, bf16, peaks.bytes_per_s),
        "elementwise": fit_roofline(elementwise, bf16, peaks.bytes_per_s),
    }
    per_layer = (
        gemm_launches_per_layer * fits["gemm"].intercept_s
        + fits["attention"].intercept_s
        + fits["elementwise"].intercept_s
    )
    factors = {
        "gemm_compute_efficiency": fits["gemm"].compute_efficiency,
        "gemm_bandwidth_efficiency": fits["gemm"].bandwidth_efficiency,
        "attention_compute_efficiency": fits["attention"].compute_efficiency,
        "attention_bandwidth_efficiency": fits["attention"].bandwidth_efficiency,
        "layer_overhead_s": min(per_layer / units_per_layer, MAX_LAYER_OVERHEAD_S),
    }
    if latent:
        del factors["attention_bandwidth_efficiency"]
    return CollectedFit({k: float(f"{v:.4g}") for k, v in factors.items()}, fits)
