"""`llmsizer calibrate` and `llmsizer compare`: files in, a fitted engine and tables out."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from llmsizer.bench.priority import realtime_allowed
from llmsizer.calibrate.compare import (
    BAR_METRICS,
    Comparison,
    compare_summaries,
    describe_point,
    markdown_table,
    pool_repeats,
)
from llmsizer.calibrate.step_calibration import load_step_calibration, predict_calibrated
from llmsizer.cli import app, main
from llmsizer.records import write_jsonl
from llmsizer.sim import Engine, EngineConfig, LinearStepCost
from llmsizer.workload import Workload

runner = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "reference-server" / "calibration"
CONFIG = EngineConfig(engine="vllm", max_num_seqs=32, max_num_batched_tokens=2048)
TRUE = LinearStepCost(5e-3, 30e-6, 0.5e-3, 0.0)


def write_sweep(folder: Path) -> Path:
    """A `llmsizer bench --json` file (and its records) that the simulator 'measured'."""
    points = []
    for c in (1, 8):
        workload = Workload(np.full(16, 300), np.full(16, 48), concurrency=c)
        records = Engine(CONFIG, TRUE, 0.05).run(workload).records
        write_jsonl(records, folder / f"sweep-concurrency{c}.jsonl")
        points.append(
            {
                "tool": "llmsizer",
                "max_concurrency": c,
                "request_rate": None,
                "records_path": f"sweep-concurrency{c}.jsonl",
            }
        )
    path = folder / "sweep.json"
    path.write_text(json.dumps(points))
    return path


def test_calibrate_writes_a_file_that_simulate_runs(tmp_path: Path) -> None:
    sweep = write_sweep(tmp_path)
    cal_path = tmp_path / "cal.yaml"
    args = ["calibrate", str(sweep), "--out", str(cal_path), "--max-num-seqs", "32"]
    r = runner.invoke(app, [*args, "--max-num-batched-tokens", "2048", "--no-context-term"])
    assert r.exit_code == 0, r.output
    assert "first-token delay" in r.output and "concurrency 8" in r.output
    cal = load_step_calibration(cal_path)
    assert cal.step_cost.base_ms == pytest.approx(5.0, rel=0.05)
    assert cal.first_token_delay_ms == pytest.approx(50.0, rel=0.05)
    assert [p.concurrency for p in cal.fitted_on] == [1, 8]
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(f"step_cost: {{kind: calibrated, calibration: {cal_path}}}\n")
    out = tmp_path / "pred.json"
    sim_args = ["simulate", str(scenario), "--arrival", "poisson", "--request-rate", "2"]
    r = runner.invoke(app, [*sim_args, "--num-requests", "20", "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["scenario"]["step_cost"]["kind"] == "calibrated"


MEASURED = [
    {"max_concurrency": None, "request_rate": 0.5, "mean_ttft_ms": 100.0, "mean_tpot_ms": 10.0,
     "request_throughput": 0.5, "output_throughput": 64.0},
    {"max_concurrency": None, "request_rate": 2.0, "mean_ttft_ms": 400.0, "mean_tpot_ms": 20.0,
     "request_throughput": 2.0, "output_throughput": 256.0},
]  # fmt: skip


def predicted(rate: float, ttft: float, tpot: float, throughput: float) -> dict[str, object]:
    scenario = {"workload": {"arrival": "poisson", "request_rate": rate}}
    return {"scenario": scenario, "mean_ttft_ms": ttft, "mean_tpot_ms": tpot,
            "request_throughput": throughput}  # fmt: skip


def test_compare_pairs_points_in_order_and_writes_markdown(tmp_path: Path) -> None:
    meas = tmp_path / "measured.json"
    meas.write_text(json.dumps(MEASURED))
    p1, p2 = tmp_path / "p1.json", tmp_path / "p2.json"
    p1.write_text(json.dumps(predicted(0.5, 110.0, 9.0, 0.5)))
    p2.write_text(json.dumps(predicted(2.0, 500.0, 20.0, 1.9)))
    md = tmp_path / "cmp.md"
    args = ["compare", str(meas), str(p1), str(p2), "--markdown", str(md)]
    r = runner.invoke(app, args, env={"COLUMNS": "150"})
    assert r.exit_code == 0, r.output
    assert "Poisson 0.5 req/s" in r.output and "+10.0%" in r.output
    table = md.read_text()
    assert "| Poisson 2 req/s | mean TTFT (ms) | 400.0 | 500.0 | +25.0 % |" in table
    assert "output throughput" not in table  # the predictions lack it: only shared metrics
    r = runner.invoke(app, [*args, "--tolerance", "15", "--overwrite"])
    assert r.exit_code == 1
    assert "| **no** |" in md.read_text()


def test_compare_needs_one_prediction_per_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    meas = tmp_path / "measured.json"
    meas.write_text(json.dumps(MEASURED))
    p1 = tmp_path / "p1.json"
    p1.write_text(json.dumps(predicted(0.5, 110.0, 9.0, 0.5)))
    monkeypatch.setattr("sys.argv", ["llmsizer", "compare", str(meas), str(p1)])
    with pytest.raises(SystemExit) as e:
        main()
    assert e.value.code == 2
    assert "has 2 points but the predictions hold 1" in " ".join(capsys.readouterr().err.split())


def test_repeated_points_are_judged_by_their_mean(tmp_path: Path) -> None:
    """Three runs of one load: each off by 20 % one way or the other, the mean spot on."""
    runs = [{**MEASURED[0], "mean_ttft_ms": t} for t in (80.0, 100.0, 120.0)]
    meas = tmp_path / "measured.json"
    meas.write_text(json.dumps(runs))
    pred = tmp_path / "predicted.json"
    pred.write_text(json.dumps([predicted(0.5, 100.0, 10.0, 0.5)] * 3))
    md = tmp_path / "cmp.md"
    args = ["compare", str(meas), str(pred), "--markdown", str(md), "--tolerance", "15"]
    r = runner.invoke(app, args, env={"COLUMNS": "150"})
    assert r.exit_code == 0, r.output
    (pooled,) = [row for row in pool_repeats(compare_summaries_of(runs)) if "TTFT" in row.name]
    assert pooled.label == "Poisson 0.5 req/s, mean of 3 runs"
    assert pooled.measured == pytest.approx(100.0) and pooled.error == pytest.approx(0.0)
    assert pooled.measured_se == pytest.approx(20.0 / 3**0.5)
    text = md.read_text()
    assert "| Poisson 0.5 req/s | mean TTFT (ms) | 80.0 | 100.0 | +25.0 % |" in text
    assert "| Poisson 0.5 req/s, mean of 3 runs | mean TTFT (ms) | 100.0 ± 11.5" in text


def compare_summaries_of(runs: list[dict[str, object]]) -> list[Comparison]:
    return [
        row
        for m in runs
        for row in compare_summaries(m, predicted(0.5, 100.0, 10.0, 0.5), describe_point(m))
    ]


def test_rows_and_labels() -> None:
    rows = compare_summaries(MEASURED[0], {"mean_ttft_ms": 90.0, "mean_tpot_ms": True}, "x")
    assert [r.metric for r in rows] == ["mean_ttft_ms"]
    assert rows[0].error == pytest.approx(-0.1)
    assert describe_point({"max_concurrency": 4, "request_rate": "inf"}) == "concurrency 4"
    assert describe_point({"concurrency": 2}) == "concurrency 2"
    closed = {"scenario": {"workload": {"arrival": "closed_loop", "concurrency": 8}}}
    assert describe_point(closed) == "concurrency 8"
    assert describe_point({"request_rate": 3, "burstiness": 0.5}).startswith("gamma")
    assert describe_point({"offline": True}) == "offline"
    assert markdown_table(rows).splitlines()[2] == "| x | mean TTFT (ms) | 100.0 | 90.0 | -10.0 % |"
    noisy = {**MEASURED[0], "std_ttft_ms": 40.0, "completed": 100}
    (row,) = compare_summaries(noisy, {"mean_ttft_ms": 90.0}, "x")
    assert row.measured_se == pytest.approx(4.0)
    assert "| 100.0 ± 4 (4 %) | 90.0 |" in markdown_table([row])


@pytest.mark.parametrize("run", ["light", "heavy"])
def test_the_committed_comparison_is_current(run: str) -> None:
    """examples/reference-server/calibration: each round's prediction follows from the
    committed calibration and that round's settings, and comparison.md shows the mean."""
    cal = load_step_calibration(EXAMPLE / "calibration.yaml")
    measured = json.loads((EXAMPLE / f"poisson-{run}.json").read_text())
    committed = json.loads((EXAMPLE / f"predicted-{run}.json").read_text())
    assert len(measured) == len(committed) == len(list(EXAMPLE.glob("round*/sweep.json"))) > 1
    rows = []
    for m, p in zip(measured, committed, strict=True):
        summary = predict_calibrated(
            cal,
            isl=m["isl"],
            osl=m["osl"],
            request_rate=m["request_rate"],
            num_requests=m["num_prompts"],
            seed=m["seed"],
        )
        for key in BAR_METRICS:
            assert summary[key] == pytest.approx(p[key], rel=1e-9)
        rows += compare_summaries(m, p, describe_point(m))
    assert markdown_table(pool_repeats(rows), 0.15) in (EXAMPLE / "comparison.md").read_text()


def test_predict_replays_a_bench_run(tmp_path: Path) -> None:
    """`predict --seed --num-requests` with a bench run's settings gives the committed
    prediction of that run (the same arrivals the client sent)."""
    m = json.loads((EXAMPLE / "poisson-heavy.json").read_text())[0]
    committed = json.loads((EXAMPLE / "predicted-heavy.json").read_text())[0]
    out = tmp_path / "p.json"
    args = ["predict", "--calibration", str(EXAMPLE / "calibration.yaml"), "--isl", "512",
            "--osl", "128", "--request-rate", str(m["request_rate"]), "--seed", str(m["seed"]),
            "--num-requests", str(m["num_prompts"]), "--json", str(out)]  # fmt: skip
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    predicted = json.loads(out.read_text())
    for key in BAR_METRICS:
        assert predicted[key] == pytest.approx(committed[key], rel=1e-9)


@pytest.mark.server
@pytest.mark.skipif(not os.environ.get("LLMSIZER_SERVER_URL"), reason="LLMSIZER_SERVER_URL unset")
def test_calibrate_on_the_real_server(tmp_path: Path) -> None:
    url = os.environ["LLMSIZER_SERVER_URL"]
    sweep = tmp_path / "sweep.json"
    bench = ["bench", "--base-url", url, "--isl", "256", "--osl", "32", "--num-prompts", "8"]
    bench += ["--realtime"] if realtime_allowed() else []
    r = runner.invoke(app, [*bench, "--concurrency", "1,4", "--json", str(sweep),
                            "--records", str(tmp_path / "sweep.jsonl")])  # fmt: skip
    assert r.exit_code == 0, r.output
    cal = tmp_path / "cal.yaml"
    flags = ["--no-context-term", "--no-overlap-scheduler"]  # vLLM on a CPU: not one step ahead
    r = runner.invoke(app, ["calibrate", str(sweep), "--out", str(cal), *flags])
    assert r.exit_code == 0, r.output
    assert max(abs(x.error_pct) for x in load_step_calibration(cal).residuals) < 50


def test_predict_and_simulate_accept_a_fitted_step_cost_file() -> None:
    from pathlib import Path

    from typer.testing import CliRunner

    from llmsizer.cli import app

    cal = Path(__file__).resolve().parents[1] / "examples/reference-server/calibration"
    path = str(cal / "calibration.yaml")
    runner = CliRunner()
    args = ["--isl", "512", "--osl", "16", "--request-rate", "1"]
    r = runner.invoke(app, ["predict", "--calibration", path, *args])
    assert r.exit_code == 0, r.output
    assert "Mean TTFT (ms)" in r.output
    r = runner.invoke(app, ["simulate", "--calibration", path, *args, "--num-requests", "20"])
    assert r.exit_code == 0, r.output
    assert "of 8192" in r.output  # the server's KV blocks come from the calibration file
