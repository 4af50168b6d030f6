"""The command line: clear errors, never a traceback; flags reach the library."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from llmsizer.cli import app
from tests.cli_run import run_main

runner = CliRunner()


def test_predict_prints_the_summary_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    args = "predict --model llama-3.1-8b --gpu H100_SXM --precision FP8 --isl 512 --osl 64"
    r = runner.invoke(app, [*args.split(), "--concurrency", "4", "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert "mean TTFT (ms)" in r.output and "MBU" in r.output
    row = json.loads(out.read_text())
    assert row["concurrency"] == 4 and row["mean_tpot_ms"] > 0


def test_unknown_names_suggest_close_matches(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_main(
        monkeypatch,
        [
            "predict",
            "--model",
            "llama-3.1-70c",
            "--gpu",
            "h100",
            "--isl",
            "8",
            "--osl",
            "8",
            "--concurrency",
            "1",
        ],
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "llama-3.1-70b" in err and "Traceback" not in err


def test_cases_keep_unknown_columns_and_put_errors_in_their_row(tmp_path: Path) -> None:
    cases = tmp_path / "cases.csv"
    cases.write_text(
        "label,model,gpu,tp,isl,osl,concurrency\n"
        "ok,llama-3.1-8b,h100-sxm,1,256,32,2\n"
        "bad,llama-3.1-8b,h900,1,256,32,2\n"
        "neg,llama-3.1-8b,h100-sxm,1,-5,32,2\n"
    )
    out = tmp_path / "out.csv"
    r = runner.invoke(app, ["predict", "--cases", str(cases), "--out", str(out)])
    assert r.exit_code == 0, r.output
    with out.open() as f:
        rows = list(csv.DictReader(f))
    assert [row["label"] for row in rows] == ["ok", "bad", "neg"]
    assert rows[0]["error"] == "" and float(rows[0]["mean_ttft_ms"]) > 0
    assert "unknown GPU 'h900'" in rows[1]["error"]
    assert "isl = '-5'" in rows[2]["error"]


def test_catalog_commands_list_entries() -> None:
    for command, expected in (
        ("models", "llama-3.1-70b"),
        ("gpus", "h100-sxm"),
        ("systems", "dgx"),
    ):
        r = runner.invoke(app, [command])
        assert r.exit_code == 0 and expected in r.output.lower()


def test_bad_scenario_value_is_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_main(monkeypatch, ["simulate", "--max-num-seqs", "0"])
    err = capsys.readouterr().err
    assert code == 2 and "--max-num-seqs 0" in err and "Traceback" not in err


def test_simulate_the_notebook_experiment_writes_what_it_is_asked(tmp_path: Path) -> None:
    args = (
        "simulate --batching static --max-num-seqs 4 --arrival burst --num-requests 20 "
        "--isl 1000 --osl 100 --step-time-ms 10"
    ).split()
    files = {
        k: tmp_path / n
        for k, n in (
            ("--json", "s.json"),
            ("--records", "r.csv"),
            ("--plot", "t.png"),
            ("--html", "r.html"),
        )
    }
    extra = [x for k, v in files.items() for x in (k, str(v))]
    r = runner.invoke(app, [*args, *extra])
    assert r.exit_code == 0, r.output
    assert "Mean TTFT (ms)" in r.output
    summary = json.loads(files["--json"].read_text())
    assert summary["completed"] == 20 and summary["scenario"]["engine"]["batching"] == "static"
    assert files["--records"].read_text().count("\n") == 21
    assert files["--plot"].read_bytes()[:4] == b"\x89PNG"
    assert "<html" in files["--html"].read_text().lower()


def test_simulate_writes_nothing_unasked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["simulate", "--num-requests", "50", "--request-rate", "5"])
    assert r.exit_code == 0, r.output
    assert list(tmp_path.iterdir()) == []


def test_simulate_priced_by_the_gpu_model() -> None:
    r = runner.invoke(
        app,
        "simulate --model llama-3.1-8b --gpu h100-sxm --precision fp8 --num-requests 50 "
        "--request-rate 5".split(),
    )
    assert r.exit_code == 0, r.output
    assert "peak KV blocks" in r.output


def test_plan_from_flags_writes_json_and_html(tmp_path: Path) -> None:
    args = (
        "plan --model llama-3.1-8b --isl 2000 --osl 200 --peak-rps 40 --ttft-ms 500 "
        "--gpu h100-sxm --tp 1 --precision fp8"
    ).split()
    r = runner.invoke(
        app, [*args, "--json", str(tmp_path / "p.json"), "--html", str(tmp_path / "p.html")]
    )
    assert r.exit_code == 0, r.output
    data = json.loads((tmp_path / "p.json").read_text())
    assert data["model"] == "llama-3.1-8b"
    assert '<script src="http' not in (tmp_path / "p.html").read_text()


def test_plan_bad_use_case_names_the_field(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_main(
        monkeypatch,
        ["plan", "--model", "llama-3.1-8b", "--isl", "-5", "--osl", "10", "--peak-rps", "1"],
    )
    err = capsys.readouterr().err
    assert code == 2 and "--isl -5.0: Input should be greater than or equal to 0" in err
    assert "input.user" not in err and "Traceback" not in err


def test_an_error_quoting_markup_is_printed_as_it_is(monkeypatch, capsys) -> None:
    """A message that quotes a file or a server's reply may hold `[/]`: printed, not parsed."""
    import llmsizer.cli as cli

    def boom() -> None:
        raise ValueError("bad value '[/]' in [bold]x.yaml")

    monkeypatch.setattr(cli, "app", boom)
    with pytest.raises(SystemExit) as e:
        cli.main()
    assert e.value.code == 2
    assert "bad value '[/]' in [bold]x.yaml" in capsys.readouterr().err


def test_a_second_ctrl_c_ends_with_a_word_not_a_traceback(monkeypatch, capsys) -> None:
    import llmsizer.cli as cli

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "app", interrupted)
    with pytest.raises(SystemExit) as e:
        cli.main()
    assert e.value.code == 130
    assert "interrupted" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (["simulate", "--num-requests", "5", "--json"], "out.json"),
        (["predict", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "64",
          "--osl", "4", "--concurrency", "1", "--num-requests", "4", "--json"], "p.json"),
    ],
)  # fmt: skip
def test_an_earlier_result_is_never_replaced_unasked(tmp_path, args: list[str], name: str) -> None:
    from typer.testing import CliRunner

    from llmsizer.cli import app

    target = tmp_path / name
    target.write_text("earlier result\n")
    refused = CliRunner().invoke(app, [*args, str(target)])
    assert refused.exit_code != 0 and "--overwrite" in str(refused.exception)
    assert target.read_text() == "earlier result\n"
    replaced = CliRunner().invoke(app, [*args, str(target), "--overwrite"])
    assert replaced.exit_code == 0, replaced.output
    assert target.read_text().startswith("{")
