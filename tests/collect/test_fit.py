"""The roofline fit recovers known factors from synthetic timings (no PyTorch)."""

from __future__ import annotations

import pytest

from llmsizer.collect.fit import Peaks, fit_factors, fit_roofline, measured_peaks
from llmsizer.collect.timings import Kind, Timing, parse_timings_csv, timings_csv

F, B = 1e15, 3e12  # an H100-like device: 1 PFLOP/s, 3 TB/s


def _timing(kind: Kind, flops: float, bytes_: float, e_c: float, e_b: float, o: float) -> Timing:
    seconds = max(flops / (F * e_c), bytes_ / (B * e_b)) + o
    return Timing(kind, "x", "bf16", 1, 0, 0, flops, bytes_, seconds)


def _gemms(e_c: float, e_b: float, o: float) -> list[Timing]:
    # Llama-8B-like layers over 1..16k tokens: memory-bound below ~300 tokens, compute
    # above; weights of different sizes tell the launch time from the bandwidth
    rows = []
    for k, n in ((4096, 6144), (4096, 4096), (4096, 28672), (14336, 4096), (4096, 128256)):
        for tokens in (1, 4, 16, 64, 256, 1024, 4096, 16384):
            flops = 2.0 * tokens * k * n
            bytes_ = 2.0 * (k * n + tokens * (k + n))
            rows.append(_timing(Kind.GEMM, flops, bytes_, e_c, e_b, o))
    return rows


def test_fit_recovers_both_efficiencies_and_the_launch_time() -> None:
    fit = fit_roofline(_gemms(0.62, 0.81, 4e-6), F, B)
    assert fit.compute_efficiency == pytest.approx(0.62, rel=0.05)
    assert fit.bandwidth_efficiency == pytest.approx(0.81, rel=0.05)
    assert fit.intercept_s == pytest.approx(4e-6, abs=1e-6)
    assert fit.median_ape_pct < 5


def test_fit_of_memory_bound_rows_leaves_compute_at_its_highest_value() -> None:
    """Decode-only rows say nothing about compute: ties keep e_c = 1, not a guess below."""
    rows = [_timing(Kind.DECODE_ATTENTION, 1e6 * n, 1e6 * n, 0.5, 0.7, 0.0) for n in (1, 4, 16)]
    fit = fit_roofline(rows, F, B)
    assert fit.compute_efficiency == 1.0
    assert fit.bandwidth_efficiency == pytest.approx(0.7, rel=0.05)


def test_measured_peaks_are_the_best_rates_seen() -> None:
    rows = [
        Timing(Kind.SQUARE_GEMM, "s", "bf16", 1, 0, 0, 1e12, 1e9, 1.0),
        Timing(Kind.GEMM, "g", "bf16", 8, 0, 0, 3e12, 1e9, 1.0),  # beats the square
        Timing(Kind.GEMM, "g", "bf16", 1, 0, 0, 1e9, 5e10, 1.0),  # a GEMV: bandwidth
        Timing(Kind.COPY, "c", "bf16", 0, 0, 0, 0.0, 4e10, 1.0),
        Timing(Kind.GEMM, "g", "fp16", 8, 0, 0, 2e12, 1e9, 1.0),
    ]
    peaks = measured_peaks(rows)
    assert peaks.flops_per_s == {"bf16": 3e12, "fp16": 2e12}
    assert peaks.bytes_per_s == 5e10


def test_layer_overhead_is_the_launch_times_of_one_layers_kernels() -> None:
    gemm_o, attention_o, elementwise_o = 5e-6, 8e-6, 12e-6
    attention = [
        _timing(Kind.PREFILL_ATTENTION, 1e11 * n, 1e7 * n, 0.5, 0.7, attention_o)
        for n in (1, 10, 100)
    ] + [_timing(Kind.DECODE_ATTENTION, 1e5 * n, 1e7 * n, 0.5, 0.7, attention_o) for n in (1, 10)]
    elementwise = [
        _timing(Kind.ELEMENTWISE, 0.0, 1e6 * n, 1, 0.6, elementwise_o) for n in (1, 10, 100)
    ]
    fit = fit_factors(
        _gemms(0.6, 0.8, gemm_o) + attention + elementwise, Peaks({"bf16": F}, B), "bf16"
    )
    expected = 4 * gemm_o + attention_o + elementwise_o
    assert fit.factors["layer_overhead_s"] == pytest.approx(expected, rel=0.15)
    # a layer of 2.25 dense layers' kernels (MoE + MLA): the factor is a dense layer's share
    moe = fit_factors(
        _gemms(0.6, 0.8, gemm_o) + attention + elementwise, Peaks({"bf16": F}, B), "bf16",
        units_per_layer=2.25,
    )  # fmt: skip
    assert moe.factors["layer_overhead_s"] == pytest.approx(
        fit.factors["layer_overhead_s"] / 2.25, rel=1e-3
    )
    assert fit.factors["attention_compute_efficiency"] == pytest.approx(0.5, rel=0.05)
    assert fit.factors["attention_bandwidth_efficiency"] == pytest.approx(0.7, rel=0.05)
    with pytest.raises(ValueError, match="fp8"):
        fit_factors(_gemms(0.6, 0.8, gemm_o), Peaks({"bf16": F}, B), "fp8")


def test_timings_survive_their_csv() -> None:
    rows = _gemms(0.6, 0.8, 1e-6)
    assert parse_timings_csv(timings_csv(rows)) == rows
    with pytest.raises(ValueError, match="timings row 2"):
        parse_timings_csv("kind,name\nnot-a-kind,x\n")
