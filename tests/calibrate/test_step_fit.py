"""The step-cost fit recovers its own generator; calibration files round-trip and are strict."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from llmsizer.calibrate.step_calibration import (
    calibration_from_fit,
    fitted_point,
    load_any_calibration,
    load_step_calibration,
    predict_calibrated,
    save_step_calibration,
)
from llmsizer.calibrate.step_fit import (
    FIT_METRICS,
    NOISE_FLOOR,
    MeasuredPoint,
    fit_step_cost,
    point_from_records,
    simulate_point,
)
from llmsizer.config import load_scenario
from llmsizer.metrics import summarize
from llmsizer.records import RequestRecord
from llmsizer.sim import Engine, EngineConfig, LinearStepCost
from llmsizer.sim.delivery import hold_first_token
from llmsizer.workload import Workload, WorkloadSpec, make_workload

CONFIG = EngineConfig(engine="vllm", max_num_seqs=16, max_num_batched_tokens=1024)
TRUE = LinearStepCost(4e-3, 40e-6, 0.6e-3, 0.0)
TRUE_DELAY_S = 0.1


def measured_run(concurrency: int, n: int = 16, delay_s: float = TRUE_DELAY_S) -> MeasuredPoint:
    """A 'measurement' made by the simulator itself with known coefficients."""
    workload = Workload(np.full(n, 256), np.full(n, 64), concurrency=concurrency)
    records = Engine(CONFIG, TRUE, delay_s).run(workload).records
    return point_from_records(records, concurrency, f"concurrency {concurrency}")


@pytest.fixture(scope="module")
def points() -> list[MeasuredPoint]:
    return [measured_run(c) for c in (1, 4, 16)]


def test_the_fit_recovers_the_coefficients_that_made_the_runs(
    points: list[MeasuredPoint],
) -> None:
    fit = fit_step_cost(points, CONFIG, fit_context=False)
    got = fit.step_cost
    assert got.a_s == pytest.approx(TRUE.a_s, rel=0.02)
    assert got.b_s_per_prefill_token == pytest.approx(TRUE.b_s_per_prefill_token, rel=0.02)
    assert got.c_s_per_decode_seq == pytest.approx(TRUE.c_s_per_decode_seq, rel=0.02)
    assert got.d_s_per_context_token == 0.0
    assert fit.first_token_delay_s == pytest.approx(TRUE_DELAY_S, rel=0.02)
    assert fit.max_abs_error < 1e-3
    assert len(fit.residuals) == len(points) * len(FIT_METRICS)


def test_the_servers_own_means_are_fitted_on_the_engines_token_times() -> None:
    points = []
    for c in (1, 8):
        workload = Workload(np.full(16, 256), np.full(16, 64), concurrency=c)
        engine = Engine(CONFIG, TRUE).run(workload).records
        inside = summarize(engine)
        server = {"server_mean_ttft_ms": inside["mean_ttft_ms"], "server_mean_tpot_ms": 0.0,
                  "server_mean_e2el_ms": 1.0}  # fmt: skip
        client = [hold_first_token(r, TRUE_DELAY_S) for r in engine]
        points.append(point_from_records(client, c, f"c{c}", server))
    assert set(points[0].measured) == {*FIT_METRICS, "server_mean_ttft_ms"}  # zero: not measured
    fit = fit_step_cost(points, CONFIG, fit_context=False)
    assert fit.step_cost.b_s_per_prefill_token == pytest.approx(40e-6, rel=0.02)
    assert fit.first_token_delay_s == pytest.approx(TRUE_DELAY_S, rel=0.02)
    server_rows = [r for r in fit.residuals if r.metric == "server_mean_ttft_ms"]
    assert len(server_rows) == 2 and all(abs(r.error) < 1e-3 for r in server_rows)


def test_without_a_delay_the_prompt_term_absorbs_what_it_can(
    points: list[MeasuredPoint],
) -> None:
    fit = fit_step_cost(points, CONFIG, fit_first_token_delay=False, fit_context=False)
    assert fit.first_token_delay_s == 0.0
    assert fit.step_cost.b_s_per_prefill_token > TRUE.b_s_per_prefill_token
    assert fit.max_abs_error > 0.01  # a delay is not a step cost: the fit is visibly worse


def test_a_point_replays_send_times_when_not_a_closed_loop() -> None:
    times = np.array([0.5, 0.6])
    records = [
        RequestRecord(1, 3.0, 100, 2, token_times_s=times + 3.0, finish_s=3.6),
        RequestRecord(0, 1.0, 200, 2, token_times_s=times + 1.0, finish_s=1.6),
        RequestRecord(2, 2.0, 100, 2, error="timeout"),
    ]
    p = point_from_records(records, None, "open")
    assert p.workload.arrival_s is not None
    assert p.workload.arrival_s.tolist() == [0.0, 2.0]
    assert p.workload.num_prompt_tokens.tolist() == [200, 100]
    assert p.measured["mean_ttft_ms"] == pytest.approx(500.0)
    assert p.measured["mean_tpot_ms"] == pytest.approx(100.0)
    assert p.sigma("mean_ttft_ms") == NOISE_FLOOR  # equal TTFTs: no sampling noise
    assert p.relative_error["request_throughput"] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="no successful request"):
        point_from_records(records[2:], None, "failed")


def test_noisier_means_weigh_less() -> None:
    records = [
        RequestRecord(i, float(i), 100, 3, token_times_s=np.array([0.1, 0.2, 0.3]) * (1 + i) + i)
        for i in range(4)
    ]
    p = point_from_records(records, None, "noisy")
    ttft = np.array([0.1, 0.2, 0.3, 0.4])
    assert p.sigma("mean_ttft_ms") == pytest.approx(ttft.std() / 2 / ttft.mean())


def test_simulating_a_point_reproduces_it_exactly() -> None:
    p = measured_run(4)
    got = simulate_point(CONFIG, TRUE, TRUE_DELAY_S, p)
    for m in FIT_METRICS:
        assert got[m] == pytest.approx(p.measured[m], rel=1e-9)


@pytest.fixture(scope="module")
def calibration_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = measured_run(2, n=8)
    fit = fit_step_cost([p], CONFIG, fit_context=False, max_simulations=20)
    cal = calibration_from_fit(fit, CONFIG, (fitted_point(p, "sweep.json"),), "test server")
    path = tmp_path_factory.mktemp("cal") / "calibration.yaml"
    save_step_calibration(cal, path)
    return path


def test_calibration_file_round_trip(calibration_file: Path) -> None:
    cal = load_step_calibration(calibration_file)
    again = calibration_file.with_name("again.yaml")
    save_step_calibration(cal, again)
    assert load_step_calibration(again) == cal
    assert cal.engine == CONFIG
    assert cal.fitted_on[0].concurrency == 2 and cal.fitted_on[0].mean_isl == 256
    assert {r.metric for r in cal.residuals} == set(FIT_METRICS)
    assert load_any_calibration(calibration_file) == cal
    engine = cal.build_engine()
    assert engine.first_token_delay_s == pytest.approx(cal.first_token_delay_ms / 1e3)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"colour": "red"}, "colour: unknown key"),
        ({"kind": "gpu_efficiency"}, "kind = 'gpu_efficiency'"),
        ({"first_token_delay_ms": -5}, "first_token_delay_ms = -5"),
        ({"step_cost": {"base_ms": 1}}, "step_cost.per_prefill_token_ms: Field required"),
        ({"engine": {"max_num_seqs": 0}}, "engine.max_num_seqs = 0"),
    ],
)
def test_calibration_files_are_strict(
    calibration_file: Path, tmp_path: Path, change: dict[str, object], message: str
) -> None:
    data = yaml.safe_load(calibration_file.read_text())
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**data, **change}))
    with pytest.raises(ValueError, match="invalid calibration file") as e:
        load_step_calibration(bad)
    assert message in str(e.value)


def test_unreadable_calibration_files(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot read"):
        load_step_calibration(tmp_path / "missing.yaml")
    listed = tmp_path / "list.yaml"
    listed.write_text("- 1\n")
    with pytest.raises(ValueError, match="mapping"):
        load_step_calibration(listed)


def test_a_scenario_runs_the_calibrated_engine(calibration_file: Path) -> None:
    scenario = load_scenario(
        None, {"step_cost": {"kind": "calibrated", "calibration": calibration_file}}
    )
    engine = scenario.build_engine()
    cal = load_step_calibration(calibration_file)
    assert engine.config == cal.engine
    assert engine.step_cost == cal.step_cost.build()
    override = load_scenario(
        None,
        {
            "engine": {"max_num_seqs": 4},
            "step_cost": {"kind": "calibrated", "calibration": calibration_file},
        },
    )
    cfg = override.build_engine().config
    assert cfg.max_num_seqs == 4
    assert cfg.max_num_batched_tokens == CONFIG.max_num_batched_tokens


def test_predict_with_a_calibration_uses_the_benchmarks_arrivals(calibration_file: Path) -> None:
    cal = load_step_calibration(calibration_file)
    closed = predict_calibrated(cal, isl=256, osl=64, concurrency=2, num_requests=8)
    assert closed["mean_ttft_ms"] == pytest.approx(cal.residuals[0].predicted)
    spec = WorkloadSpec.model_validate(
        {
            "arrival": "poisson",
            "request_rate": 3.0,
            "isl": 256,
            "osl": 64,
            "num_requests": 12,
            "seed": 7,
        }
    )  # what `llmsizer bench --request-rate 3 --seed 7` sends
    expected = summarize(cal.build_engine().run(make_workload(spec)).records)
    got = predict_calibrated(cal, isl=256, osl=64, request_rate=3.0, num_requests=12, seed=7)
    assert got == expected
    with pytest.raises(ValueError, match="exactly one load"):
        predict_calibrated(cal, isl=1, osl=1)
