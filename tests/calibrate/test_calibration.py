"""Calibration: rows to cases, recorded schedules equal `predict`, the fit recovers the
factors that generated its data, calibration files round-trip and are strict."""

from pathlib import Path

import pytest
import yaml

from llmsizer.calibrate.gpu_fit import PRIOR_SIGMA, calibration_file, fit_efficiency
from llmsizer.calibrate.measurements import (
    Measurement,
    Skipped,
    load_measurements,
    map_row,
    trtllm_bench_settings,
)
from llmsizer.calibrate.record import record_trace
from llmsizer.calibrate.replay import replay
from llmsizer.instance import PredictSpec, make_instance, predict
from llmsizer.perf import Deployment, EfficiencyFactors, default_efficiency
from llmsizer.perf.calibrated import (
    CalibrationFile,
    calibrated_efficiency,
    load_calibration,
    packaged_calibration,
    save_calibration,
)
from llmsizer.perf.efficiency import EnginePreset
from tests.conftest import shared_path

CSV = shared_path("calibration", "measurements.csv")
PRIOR = default_efficiency("trtllm")
COLUMNS = (
    "id source_id source_url source_table source_date engine engine_version model precision "
    "gpu num_gpus tp pp isl osl length_kind concurrency batch_size request_rate_qps scenario "
    "ttft_mean_ms ttft_p50_ms ttft_p90_ms ttft_p99_ms itl_tpot_mean_ms itl_tpot_p50_ms "
    "itl_tpot_p99_ms e2e_latency_mean_ms e2e_latency_p50_ms e2e_latency_p99_ms "
    "output_tok_s_total output_tok_s_per_gpu total_tok_s requests_per_s other_metric "
    "other_value quality notes"
).split()


def csv_row(**changes: str) -> dict[str, str]:
    """A row of the calibration CSV: by default an offline trtllm-bench row (v0.17)."""
    row = dict.fromkeys(COLUMNS, "")
    row.update(
        id="2",
        source_id="TRTLLM_PERF_v0.17",
        engine="TensorRT-LLM",
        model="Llama-3.1-8B",
        precision="FP8",
        gpu="H100 SXM 80GB",
        num_gpus="1",
        tp="1",
        pp="1",
        isl="128",
        osl="128",
        batch_size="engine max (trtllm-bench tuned)",
        request_rate_qps="inf",
        scenario="offline max throughput (trtllm-bench throughput)",
        output_tok_s_total="28836.77",
        quality="A",
    )
    row.update(changes)
    return row


# --- rows to cases ----------------------------------------------------------------------


def test_offline_benchmark_row_becomes_a_trtllm_bench_run():
    m = map_row(csv_row(model="Llama-3.1-8B", gpu="H100 SXM 80GB", isl="128", osl="128"))
    assert isinstance(m, Measurement)
    s = m.spec
    assert (s.model, s.gpu, s.precision, s.kv_cache_dtype) == (
        "llama-3.1-8b",
        "h100-sxm",
        "fp8",
        "fp8",
    )
    assert s.offline and s.preset == "trtllm" and s.num_requests == 30000
    assert (s.engine.max_num_seqs, s.engine.max_num_batched_tokens) == (4096, 8192)
    assert m.measured == {"output_throughput": 28836.77}


def test_trtllm_bench_settings_follow_its_heuristic():
    """8B FP8 on one H100 at 128/128: ~4077 requests' KV fit in 95 % of what the weights
    leave, so the batch rounds to 4096 and the budget 4077 x 2 to 8192; long prompts get a
    budget that holds one prompt beside the batch (chunked context is off)."""
    spec = map_row(csv_row(isl="20000", osl="2000"))
    assert isinstance(spec, Measurement)
    d = spec.spec
    assert d.engine.max_num_batched_tokens == 20000 + d.engine.max_num_seqs
    d8 = Deployment.from_names("llama-3.1-8b", "h100-sxm", "fp8", "fp8")
    seqs, tokens, utilization = trtllm_bench_settings(d8, 128, 128)
    assert (seqs, tokens) == (4096, 8192)
    assert 0.95 < utilization < 1.0


def test_online_rows_are_poisson_or_a_burst():
    common = {
        "source_id": "TRTLLM_ONLINE_v0.14",
        "scenario": "online serving, 500 requests at given QPS",
        "precision": "BF16",
        "isl": "467",
        "osl": "256",
        "ttft_mean_ms": "23",
        "itl_tpot_mean_ms": "8",
        "output_tok_s_total": "504",
        "requests_per_s": "2",
    }
    rate = map_row(csv_row(**common, request_rate_qps="2"))
    burst = map_row(csv_row(**common, request_rate_qps="INF"))
    assert isinstance(rate, Measurement) and isinstance(burst, Measurement)
    assert rate.spec.request_rate == 2.0 and rate.spec.num_requests == 500
    assert burst.spec.offline and burst.spec.num_requests == 500
    assert rate.measured == {"output_throughput": 504, "mean_ttft_ms": 23, "mean_tpot_ms": 8}


def test_static_batch_and_batch1_rows_are_closed_loops():
    static = map_row(
        csv_row(
            source_id="TRTLLM_PERF_v0.6.1",
            scenario="static batch max throughput",
            model="GPT-J-6B",
            batch_size="64",
            output_tok_s_total="",
            output_tok_s_per_gpu="2551",
            isl="2048",
            osl="128",
        )
    )
    latency = map_row(
        csv_row(
            scenario="min latency, batch 1",
            model="Llama-2-7B",
            batch_size="1",
            output_tok_s_total="",
            ttft_mean_ms="36",
            isl="2048",
            osl="1",
        )
    )
    assert isinstance(static, Measurement) and isinstance(latency, Measurement)
    assert static.spec.concurrency == 64 and static.measured == {"output_throughput_per_gpu": 2551}
    assert latency.spec.concurrency == 1 and latency.measured == {"mean_ttft_ms": 36}


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"scenario": "ratio (max throughput)"}, "not one configuration's measurement"),
        ({"gpu": "H200 vs H100"}, "GPU not one known variant"),
        ({"gpu": "A100 (memory size not stated in table)"}, "GPU not one known variant"),
        ({"model": "OPT-13B"}, "model not in the catalog"),
        ({"precision": "FP8 vs FP16"}, "precision not one format"),
        ({"tp": "", "num_gpus": "8"}, "parallel layout not given"),
        (
            {
                "scenario": "static batch max throughput",
                "tp": "2",
                "num_gpus": "2",
                "batch_size": "64",
                "output_tok_s_total": "",
                "other_metric": "throughput_out_tok_s_as_labelled",
                "other_value": "903",
            },
            "ambiguous",
        ),
    ],
)
def test_rows_that_cannot_be_one_case_are_skipped_with_a_reason(changes, reason):
    got = map_row(csv_row(**changes))
    assert isinstance(got, Skipped)
    assert reason in got.reason


@pytest.mark.shared
def test_every_row_of_the_calibration_set_is_used_or_skipped_with_a_reason():
    data = load_measurements(CSV)
    assert len(data.measurements) + len(data.skipped) == 731
    by_source = {}
    for m in data.measurements:
        by_source[m.source_id] = by_source.get(m.source_id, 0) + 1
    assert by_source["TRTLLM_PERF_v0.17"] == 373  # the offline table maps whole
    assert by_source["TRTLLM_ONLINE_v0.14"] == 72
    assert all(s.reason for s in data.skipped)


# --- recorded schedules equal predict -----------------------------------------------------

OTHER = PRIOR.replace(gemm_compute_efficiency=0.4, attention_bandwidth_efficiency=0.5)
HELD = OTHER.replace(first_token_delay_s=0.08)  # the front end holds each first chunk 80 ms
MOE_HELD = HELD.replace(moe_first_token_delay_s=0.03)  # and a MoE model's 30 ms more
KEYS = ("output_throughput", "output_throughput_per_gpu", "mean_ttft_ms", "mean_tpot_ms")


@pytest.mark.parametrize(
    "spec",
    [
        PredictSpec(model="llama-3.1-8b", gpu="h100", isl=512, osl=64, offline=True,
                    engine="trtllm", num_requests=200),
        PredictSpec(model="llama-3.1-8b", gpu="h100", isl=512, osl=64, concurrency=16,
                    num_requests=64),
        PredictSpec(model="llama-3.1-70b", gpu="h100", tp=2, pp=2, num_gpus=8, isl=300,
                    osl=50, concurrency=24, num_requests=96),
        PredictSpec(model="mixtral-8x7b", gpu="h200", tp=2, isl=1000, osl=100, offline=True,
                    engine="sglang", num_requests=100),
    ],
    ids=["offline", "closed-loop", "pp-and-data-parallel", "moe-sglang"],
)  # fmt: skip
def test_replay_equals_predict_under_any_factors_when_the_clock_does_not_schedule(spec):
    trace = record_trace(spec, PRIOR)
    for eff in (PRIOR, OTHER, HELD, MOE_HELD):
        expected = predict(spec, eff).summary
        got = replay(trace, eff)
        for key in KEYS:
            assert got[key] == pytest.approx(expected[key], rel=1e-9), key


def test_a_first_token_delay_adds_to_ttft_and_leaves_the_engine_alone():
    spec = PredictSpec(model="llama-3.1-8b", gpu="h100", isl=512, osl=64, concurrency=16,
                       num_requests=64)  # fmt: skip
    base, held = predict(spec, OTHER).summary, predict(spec, HELD).summary
    assert held["mean_ttft_ms"] == pytest.approx(base["mean_ttft_ms"] + 80.0, rel=1e-9)
    assert held["output_throughput"] == pytest.approx(base["output_throughput"], rel=1e-12)
    # the 80 ms hold is shorter than 63 decode steps: tokens made during it arrive with the
    # first, so the decode span the client sees shrinks by exactly the hold
    assert held["mean_tpot_ms"] == pytest.approx(base["mean_tpot_ms"] - 80.0 / 63, rel=1e-9)


@pytest.mark.parametrize(("model", "moe"), [("llama-3.1-8b", False), ("mixtral-8x7b", True)])
def test_the_moe_hold_adds_to_a_moe_models_ttft_alone(model, moe):
    """`moe_first_token_delay_s` (30 ms) holds a model with routed experts' first token on top
    of `first_token_delay_s`, as the simulator and the replay both price it; a dense model's
    prediction does not move."""
    spec = PredictSpec(model=model, gpu="h200", tp=2, isl=512, osl=64, concurrency=16,
                       num_requests=64)  # fmt: skip
    base, held = predict(spec, HELD).summary, predict(spec, MOE_HELD).summary
    assert make_instance(spec, efficiency=MOE_HELD).first_token_delay_s == pytest.approx(
        0.08 + 0.03 * moe
    )
    assert held["mean_ttft_ms"] == pytest.approx(base["mean_ttft_ms"] + 30.0 * moe, rel=1e-9)
    assert held["output_throughput"] == pytest.approx(base["output_throughput"], rel=1e-12)
    assert replay(record_trace(spec, PRIOR), MOE_HELD)["mean_ttft_ms"] == pytest.approx(
        held["mean_ttft_ms"], rel=1e-9
    )


def test_replay_of_a_poisson_run_equals_predict_at_its_own_factors():
    spec = PredictSpec(model="llama-3.1-8b", gpu="h100", isl=512, osl=64, request_rate=20,
                       engine="trtllm", num_requests=150)  # fmt: skip
    expected = predict(spec, OTHER).summary
    got = replay(record_trace(spec, OTHER), OTHER)
    for key in KEYS:
        assert got[key] == pytest.approx(expected[key], rel=1e-9), key


# --- the fit recovers its own generator ---------------------------------------------------

TRUE = PRIOR.replace(
    gemm_compute_efficiency=0.45,
    gemm_bandwidth_efficiency=0.85,
    attention_compute_efficiency=0.35,
    attention_bandwidth_efficiency=0.55,
    layer_overhead_s=20e-6,
    prefill_layer_overhead_s=80e-6,
    step_overhead_s=1.5e-3,
)


def synthetic_cases() -> list[tuple[PredictSpec, dict[str, float]]]:
    """Measurements the model itself makes under TRUE: batch-1 latency (overheads, weight
    streaming), long prefills (GEMM math, attention math), long-context batches (KV reads),
    a Poisson run (exercises re-simulation)."""
    specs = [
        dict(isl=128, osl=32, concurrency=1),
        dict(isl=8000, osl=8, concurrency=1),
        dict(isl=2000, osl=16, concurrency=1),
        dict(isl=256, osl=256, concurrency=64),
        dict(isl=7000, osl=200, concurrency=32),
        dict(isl=1000, osl=128, offline=True),
        dict(isl=300, osl=100, request_rate=30.0),
    ]
    cases = []
    for i, kw in enumerate(specs):
        model = "llama-3.1-8b" if i % 2 else "llama-3.1-70b"
        tp = 1 if model == "llama-3.1-8b" else 4
        spec = PredictSpec(model=model, gpu="h100", tp=tp, engine="trtllm", num_requests=48, **kw)
        summary = predict(spec, TRUE).summary
        keys = ("mean_ttft_ms", "mean_tpot_ms", "output_throughput")
        cases.append((spec, {k: summary[k] for k in keys}))
    return cases


@pytest.fixture(scope="module")
def cases() -> list[tuple[PredictSpec, dict[str, float]]]:
    return synthetic_cases()


def test_the_fit_recovers_the_factors_that_made_its_data(cases):
    result = fit_efficiency(cases, PRIOR, prior_sigma=None)
    for name in result.fitted:
        assert getattr(result.factors, name) == pytest.approx(getattr(TRUE, name), rel=0.02), name
    assert max(r.ape_pct for r in result.residuals) < 0.1
    assert result.num_rounds == 2  # the Poisson case joined once re-simulated near the fit


def test_the_prior_holds_what_the_data_leaves_open(cases):
    """Single-GPU cases say nothing about the interconnect: with a prior it stays put, and
    the factors the data determines land between their start and the truth."""
    truth = PRIOR.replace(gemm_bandwidth_efficiency=0.85, step_overhead_s=1.5e-3)
    single_gpu = []
    for spec, measured in cases:
        if spec.tensor_parallel_size == 1:
            summary = predict(spec, truth).summary
            single_gpu.append((spec, {k: summary[k] for k in measured}))
    fit = ("interconnect_efficiency", "gemm_bandwidth_efficiency", "step_overhead_s")
    free = fit_efficiency(single_gpu, PRIOR, fit=fit)
    held = fit_efficiency(single_gpu, PRIOR, fit=fit, prior_sigma=PRIOR_SIGMA)
    assert held.factors.interconnect_efficiency == PRIOR.interconnect_efficiency
    assert free.factors.step_overhead_s == pytest.approx(truth.step_overhead_s, rel=1e-3)
    assert PRIOR.step_overhead_s <= held.factors.step_overhead_s < truth.step_overhead_s


def test_the_fit_rejects_unknown_factors_and_bad_measurements():
    spec = PredictSpec(model="llama-3.1-8b", gpu="h100", isl=128, osl=8, concurrency=1,
                       num_requests=4)  # fmt: skip
    with pytest.raises(ValueError, match="unknown factors"):
        fit_efficiency([(spec, {"mean_ttft_ms": 10.0})], PRIOR, fit=["magic"])
    with pytest.raises(ValueError, match="must be > 0"):
        fit_efficiency([(spec, {"mean_ttft_ms": 0.0})], PRIOR)


# --- calibration files --------------------------------------------------------------------


def test_a_calibration_file_round_trips(tmp_path: Path):
    factors = PRIOR.replace(gemm_compute_efficiency=0.55, step_overhead_s=7e-4)
    path = tmp_path / "cal.yaml"
    file = CalibrationFile(kind="efficiency_factors", engine=EnginePreset.TRTLLM,
                           factors=factors.as_dict(), fitted_on={"data": "x.csv"})  # fmt: skip
    save_calibration(path, file)
    assert load_calibration(path) == factors


def test_a_partial_file_takes_the_engines_priors(tmp_path: Path):
    path = tmp_path / "cal.yaml"
    path.write_text("kind: efficiency_factors\nengine: sglang\nfactors: {layer_overhead_s: 1e-5}\n")
    assert load_calibration(path) == default_efficiency("sglang").replace(layer_overhead_s=1e-5)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"factors": {}, "surprise": 1}, "surprise: unknown key"),
        ({"factors": {"magic_efficiency": 0.5}}, "unknown efficiency factors"),
        ({"factors": {"gemm_compute_efficiency": 1.5}}, "outside its range"),
        ({"kind": "fitted_step_cost", "factors": {}}, "kind"),
        ({"factors": {}, "residuals": {"x": {"num_rows": 1, "median": 2}}}, "unknown key"),
    ],
)
def test_calibration_files_are_strict(tmp_path: Path, content, message):
    path = tmp_path / "cal.yaml"
    path.write_text(yaml.safe_dump({"kind": "efficiency_factors", **content}))
    with pytest.raises(ValueError, match=message):
        load_calibration(path)


def test_a_fit_becomes_a_calibration_file(tmp_path: Path):
    spec = PredictSpec(model="llama-3.1-8b", gpu="h100", isl=512, osl=8, concurrency=1,
                       num_requests=4)  # fmt: skip
    measured = predict(spec, TRUE).summary["mean_ttft_ms"]
    result = fit_efficiency([(spec, {"mean_ttft_ms": measured})], PRIOR, fit=["step_overhead_s"])
    file = calibration_file(result, "trtllm", {"data": "synthetic"})
    save_calibration(tmp_path / "cal.yaml", file)
    loaded = load_calibration(tmp_path / "cal.yaml")
    assert loaded.step_overhead_s == pytest.approx(result.factors.step_overhead_s, rel=1e-3)
    assert file.residuals["mean_ttft_ms"].num_rows == 1
    assert file.fitted_on["fitted_factors"] == ["step_overhead_s"]


@pytest.mark.parametrize("engine", list(EnginePreset))
def test_the_shipped_fit_loads_for_every_engine(engine):
    factors = calibrated_efficiency(engine)
    assert isinstance(factors, EfficiencyFactors)
    assert packaged_calibration(engine).kind == "efficiency_factors"
    assert factors.step_overhead_s == default_efficiency(engine).step_overhead_s or (
        engine is EnginePreset.TRTLLM
    )
