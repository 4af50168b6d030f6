"""`llmsizer collect` on the CPU end to end: a tiny Llama-shaped model (shipped beside this
test) is timed, fitted and written, with an all-reduce over two gloo processes; predict,
simulate and `gpus --factors` accept the file."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from llmsizer.cli import app
from llmsizer.cli.catalog import factor_source
from llmsizer.collect.timings import Kind, parse_timings_csv
from llmsizer.perf.calibrated import load_calibration, packaged_calibration, read_calibration
from llmsizer.specs import get_gpu

torch = pytest.importorskip("torch")

TINY = Path(__file__).parent / "data" / "tiny-llama" / "config.json"
runner = CliRunner()


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("collect") / "cpu.yaml"
    args = ["collect", "--model", str(TINY), "--quick", "--device", "cpu", "--threads", "1"]
    args += ["--devices", "2"]
    r = runner.invoke(app, [*args, "--out", str(out)])
    assert r.exit_code == 0, r.output
    return out


def test_the_file_says_it_is_a_cpu_and_keeps_its_raw_timings(collected: Path) -> None:
    cal = read_calibration(collected)
    assert cal.fitted_on["device_kind"] == "cpu"
    assert cal.device is not None and cal.device["vendor"] == "cpu"
    timings = parse_timings_csv(collected.with_name("cpu.timings.csv").read_text())
    assert len(timings) == cal.fitted_on["num_timings"]
    assert {t.kind for t in timings} == set(Kind) - {Kind.EXPERT_GEMM}  # a dense model
    assert all(t.seconds > 0 for t in timings)


def test_the_allreduce_ran_with_gloo_on_the_cpu_and_set_the_collective_factors(
    collected: Path,
) -> None:
    cal = read_calibration(collected)
    assert cal.fitted_on["allreduce"].startswith("timed with gloo over 2 processes on the CPU")
    fit = cal.fitted_on["allreduce_fit"]
    assert fit["backend"] == "gloo" and fit["ranks"] == 2 and fit["hops"] == 2  # a ring of 2
    assert 0 < fit["bus_bandwidth_gb_s"] < math.inf and fit["num_rows"] >= 2
    assert 0 < cal.factors["interconnect_efficiency"] <= 1
    assert 0 < cal.factors["collective_hop_latency_s"] <= 100e-6
    # the device's link is the measured bus bandwidth, and the file says so
    assert cal.device is not None and "gloo all-reduce" in cal.device["sources"]["interconnect"]
    assert cal.device["pcie_gb_s"] / 2 == pytest.approx(fit["link_gb_s"], rel=1e-3)
    rows = [
        t
        for t in parse_timings_csv(collected.with_name("cpu.timings.csv").read_text())
        if t.kind is Kind.ALLREDUCE
    ]
    assert all(t.batch == 2 and t.name == "gloo" for t in rows)
    assert all(t.bytes == 256 * 2 * t.tokens for t in rows)  # hidden x tokens x BF16


def test_collected_gemm_rate_lies_between_a_tenth_of_the_peak_and_the_peak(
    collected: Path,
) -> None:
    """The peak is measured: the best rate of any BF16 GEMM timed (square or the model's)."""
    timings = parse_timings_csv(collected.with_name("cpu.timings.csv").read_text())
    peak = max(
        t.flops_per_s
        for t in timings
        if t.kind in (Kind.GEMM, Kind.SQUARE_GEMM) and t.precision == "bf16"
    )
    square = max(
        t.flops_per_s for t in timings if t.kind is Kind.SQUARE_GEMM and t.precision == "bf16"
    )
    device = get_gpu(str(collected))
    assert device.bf16_flops_per_s == pytest.approx(peak, rel=1e-3)  # the entry's peak
    assert square <= peak
    rate = device.bf16_flops_per_s * load_calibration(collected).gemm_compute_efficiency
    # the file keeps 4 significant digits of the peak: allow that rounding above it
    assert peak / 10 <= rate <= peak * (1 + 1e-3)


def test_predict_accepts_the_file_without_a_gpu_name(collected: Path, tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    args = ["predict", "--model", str(TINY), "--calibration", str(collected)]
    r = runner.invoke(
        app, [*args, "--isl", "64", "--osl", "16", "--concurrency", "2", "--json", str(out)]
    )
    assert r.exit_code == 0, r.output
    assert "cpu.yaml" in r.output  # priced on the collected device
    assert yaml.safe_load(out.read_text())["mean_tpot_ms"] > 0


def test_simulate_and_gpus_factors_accept_the_file(collected: Path) -> None:
    args = ["simulate", "--model", str(TINY), "--gpu", str(collected)]
    r = runner.invoke(app, [*args, "--calibration", str(collected), "--num-requests", "20"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(
        app, ["gpus", "--factors", "--calibration", str(collected)], terminal_width=200
    )
    assert r.exit_code == 0, r.output
    assert "Efficiency factors" in r.output
    cal = read_calibration(collected)
    assert factor_source(cal, "gemm_compute_efficiency").startswith("collected on CPU")
    assert factor_source(cal, "step_overhead_s") == "vllm prior"  # not a kernel timing
    shipped = packaged_calibration("trtllm")
    assert factor_source(shipped, "gemm_compute_efficiency") == "fit (60 measurements)"


def test_the_end_to_end_check_is_reported(collected: Path) -> None:
    check = read_calibration(collected).fitted_on["decode_check"]
    assert len(check["points"]) >= 2
    errors = [abs(p["error_pct"]) for p in check["points"]]
    errors.sort()
    middle = len(errors) // 2
    assert errors[(len(errors) - 1) // 2] <= check["median_abs_error_pct"] <= errors[middle]
    assert all(p["measured_ms"] > 0 and p["predicted_ms"] > 0 for p in check["points"])


def test_an_existing_file_is_not_replaced(collected: Path) -> None:
    r = runner.invoke(app, ["collect", "--model", str(TINY), "--quick", "--out", str(collected)])
    assert r.exit_code != 0 and "exists" in str(r.exception or r.output)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--precision", "fp8"], "precision 'fp8' is not timed on CPU"),
        (["--precision", "fp3"], "unknown precision"),
        (["--device", "tpu"], "device 'tpu'; allowed: auto, cuda, cpu"),
        (["--gpu", "h100-sxm"], "a CPU run is priced at its measured peaks"),
    ],
)
def test_bad_flags_are_refused_naming_the_value(
    args: list[str], message: str, tmp_path: Path
) -> None:
    out = tmp_path / "x.yaml"
    base = ["collect", "--model", str(TINY), "--quick", "--device", "cpu", "--out", str(out)]
    if "--device" in args:
        base = base[:4] + base[6:]
    r = runner.invoke(app, [*base, *args])
    assert r.exit_code != 0
    assert message in str(r.exception)
    assert not out.exists()


def test_linear_attention_models_are_refused_before_any_timing(tmp_path: Path) -> None:
    r = runner.invoke(
        app, ["collect", "--model", "qwen3.5-397b-a17b", "--out", str(tmp_path / "m.yaml")]
    )
    assert "does not time yet" in str(r.exception)


def test_without_pytorch_collect_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    r = runner.invoke(app, ["collect", "--model", str(TINY), "--out", str(tmp_path / "t.yaml")])
    assert "pip install 'llmsizer[collect]'" in str(r.exception)


def test_the_prefill_check_is_reported_beside_the_decode_check(collected: Path) -> None:
    """Whole prompts through the same layers, against the prefill step's prediction."""
    check = read_calibration(collected).fitted_on["prefill_check"]
    assert [(p["prompts"], p["prompt_tokens"]) for p in check["points"]] == [(1, 64), (2, 128)]
    assert all(p["measured_ms"] > 0 and p["predicted_ms"] > 0 for p in check["points"])
    errors = sorted(abs(p["error_pct"]) for p in check["points"])
    assert errors[0] <= check["median_abs_error_pct"] <= errors[-1]
