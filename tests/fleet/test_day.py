"""`llmsizer day`: a day's arrivals under a profile, and the autoscaled fleet against the
fixed one."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from llmsizer.cli import app
from llmsizer.fleet.autoscale import Autoscaler
from llmsizer.fleet.day import (
    CHAT_PROFILE,
    HOUR_S,
    day_arrivals,
    day_workload,
    parse_profile,
    replay_day,
)
from llmsizer.sim import LinearStepCost
from llmsizer.workload import Workload
from tests.cli_run import refusal
from tests.sim.conftest import make_engine

runner = CliRunner()


def test_poisson_arrivals_follow_the_profile_hour_by_hour() -> None:
    """Time-rescaling: a unit-rate Poisson process through the inverse cumulative rate is a
    Poisson process of rate peak x profile(h): each hour's count within 4 sigma of its mean,
    none in an hour at 0."""
    profile = (0.25, 1.0, 0.0, 0.5)
    w = day_workload(None, profile, 2.0, 4.0, seed=1, lengths=(100, 10))
    assert w.arrival_s is not None
    assert np.all(np.diff(w.arrival_s) >= 0) and w.arrival_s[-1] < 4 * HOUR_S
    counts = np.bincount((w.arrival_s // HOUR_S).astype(int), minlength=4)
    for h, share in enumerate(profile):
        mean = 2.0 * HOUR_S * share
        assert abs(counts[h] - mean) <= 4 * np.sqrt(mean) + 1e-9, (h, counts[h], mean)
    assert counts[2] == 0


def test_a_traces_pattern_is_kept_and_scaled_to_the_rate() -> None:
    """Gaps 1, 3, 1, 3, ... (mean 2) under a flat profile at 5 req/s become 0.1, 0.3, ...:
    the trace's burstiness kept, its rate the profile's."""
    t = np.concatenate(([0.0], np.cumsum(np.tile([1.0, 3.0], 50))))  # 100 gaps, mean 2
    trace = Workload(np.full(101, 7), np.full(101, 3), arrival_s=t)
    w = day_workload(trace, (1.0,), 5.0, 0.01, seed=0)
    assert w.arrival_s is not None
    gaps = np.diff(w.arrival_s)
    assert len(gaps) > 100  # the pattern tiled past the trace's end
    assert w.arrival_s[0] == pytest.approx(0.1)  # the first gap, then 0.3, 0.1, 0.3, ...
    np.testing.assert_allclose(gaps, np.resize([0.3, 0.1], len(gaps)), rtol=1e-9)
    assert set(w.num_prompt_tokens.tolist()) == {7}
    np.testing.assert_allclose(day_arrivals(np.array([1800.0]), (0.5,), 1.0, 2.0), [3600.0])


def test_profiles_by_name_or_hourly_fractions_and_bad_ones_refused() -> None:
    assert parse_profile("chat") == CHAT_PROFILE and max(CHAT_PROFILE) <= 1.0
    assert min(CHAT_PROFILE) == pytest.approx(0.2, abs=0.01)  # 04:00 trough
    assert parse_profile("0.2, 1, 0.5") == (0.2, 1.0, 0.5)
    for bad, message in [
        ("noon", "a daily profile is"),
        ("0.5,1.5", "must be in .0, 1."),
        ("0,0", "one above 0"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_profile(bad)


def test_the_autoscaled_fleet_pays_less_than_the_fixed_one_over_a_quiet_day() -> None:
    """Fixed-cost steps (0.2 s each) make the instance count the only difference: the fixed
    fleet pays for every hour; the autoscaler, starting from one instance, pays for the
    second only around the busy hour, and serves everything."""
    engine = make_engine(LinearStepCost(0.2, 0.0, 0.0, 0.0), max_num_seqs=8)
    w = day_workload(None, (0.1, 1.0, 0.1), 4.0, 3.0, seed=2, lengths=(50, 20))
    scaler = Autoscaler(target_in_flight=4, max_instances=4, startup_s=30.0, cooldown_s=120.0)
    day = replay_day(engine, w, 4, scaler, hours=3.0, ttft_s=1.0)
    assert day.fixed.instance_hours == pytest.approx(12.0)
    np.testing.assert_allclose(day.fixed.instances, 4.0)
    assert day.autoscaled.instance_hours < 0.8 * day.fixed.instance_hours
    assert day.autoscaled.instances[1] > day.autoscaled.instances[0]  # scaled up for the peak
    assert sum(day.requests) == w.num_requests
    assert day.fixed.attainment_day == pytest.approx(1.0)
    assert 0.0 < day.autoscaled.attainment_day <= 1.0


DAY = (
    "day --model llama-3.1-8b --gpu h100-sxm --peak-rps 2 --instances 2 --target-in-flight 8 "
    "--storage-gb-s 2 --isl 500 --osl 50 --hours 0.25 --profile flat --ttft-ms 1000"
)


def test_day_from_the_command_line_writes_json_and_a_picture(tmp_path: Path) -> None:
    out, png = tmp_path / "day.json", tmp_path / "day.png"
    args = [*DAY.split(), "--usd-per-gpu-hour", "3", "--json", str(out), "--plot", str(png)]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "GPU-hours" in r.output and "per hour" in r.output
    data = json.loads(out.read_text())
    assert data["fixed"]["gpu_hours"] == pytest.approx(2 * 0.25)  # 2 instances x TP1 x 0.25 h
    assert data["fixed"]["usd"] == pytest.approx(1.5)
    # 16 GB of Llama 3.1 8B BF16 weights at 2 GB/s
    assert 7.0 < data["autoscaled"]["startup_s"] < 9.0
    assert len(data["hours"]) == 1 and data["hours"][0]["num_requests"] == data["num_requests"]
    # a quarter of an hour at a flat 2 req/s: the row's rate is over its 900 s, not 3600
    assert data["hours"][0]["request_rate"] == pytest.approx(data["num_requests"] / 900)
    assert abs(data["num_requests"] - 1800) <= 4 * 1800**0.5
    assert png.stat().st_size > 10_000
    again = runner.invoke(app, args)
    assert again.exit_code != 0  # refuses to overwrite without --overwrite


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ("", "exists: pass --overwrite"),
        ("--profile noon", "a daily profile is chat or flat"),
        ("--router fastest", "unknown router 'fastest'"),
        ("--storage-gb-s 0", "--storage-gb-s must be a finite number > 0"),
        ("--instances 0", "at least 1 instance"),
        ("--trace x.csv", "--trace gives the lengths"),
    ],
)
def test_bad_day_flags_are_one_clear_error(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    flags: str,
    message: str,
) -> None:
    existing = tmp_path / "day.json"
    existing.write_text("{}")
    args = [*DAY.split(), *flags.split(), "--json", str(existing)]
    if flags:
        args.append("--overwrite")
    assert message in refusal(monkeypatch, capsys, args)
