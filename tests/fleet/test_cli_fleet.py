"""`llmsizer simulate --replicas N --router R`: a fleet from the command line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from llmsizer.cli import app
from tests.cli_run import run_main

runner = CliRunner()
BASE = "simulate --num-requests 400 --isl 200 --osl 20 --step-time-ms 10"
LOAD = BASE + " --request-rate 40"


def test_simulate_a_fleet_writes_summary_and_records_with_instances(tmp_path: Path) -> None:
    summary, records = tmp_path / "s.json", tmp_path / "r.csv"
    args = [*LOAD.split(), "--replicas", "4", "--router", "least_outstanding"]
    r = runner.invoke(app, [*args, "--json", str(summary), "--records", str(records)])
    assert r.exit_code == 0, r.output
    assert "4 instances" in r.output and "requests per instance" in r.output
    data = json.loads(summary.read_text())
    assert data["replicas"] == 4 and data["router"] == "least_outstanding"
    assert sum(data["requests_per_instance"]) == data["completed"] == 400
    assert data["request_throughput_per_instance"] == pytest.approx(data["request_throughput"] / 4)
    rows = list(csv.DictReader(records.read_text().splitlines()))
    assert {row["instance_id"] for row in rows} == {"0", "1", "2", "3"}


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ("--replicas 0", "--replicas must be >= 1, got 0"),
        ("--replicas 2 --router fastest", "unknown router 'fastest'"),
        ("--replicas 2 --router prefix", "routes by shared prompt prefixes"),
        ("--replicas 2 --arrival closed_loop --concurrency 3", "not a closed loop"),
        ("--replicas 2 --batching static", "continuous batching only"),
        ("--replicas 2 --html x.html", "--plot and --html draw one engine"),
    ],
)
def test_bad_fleet_flags_are_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], flags: str, message: str
) -> None:
    load = BASE if "closed_loop" in flags else LOAD
    assert run_main(monkeypatch, [*load.split(), *flags.split()]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert message in err
