"""The levers on the command line: speculation and sparsity flags reach the simulation,
and a format the GPU has no math for is a warning that names the fallback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from llmsizer.cli import app, main

runner = CliRunner()
BASE = "--model llama-3.1-8b --gpu h100-sxm --isl 500 --osl 200".split()


def mean_tpot_ms(output: str) -> float:
    found = re.search(r"mean TPOT \(ms\)\s*│\s*([0-9.]+)", output, re.IGNORECASE)
    assert found is not None, output
    return float(found.group(1))


def test_predict_speculates_when_asked() -> None:
    plain = runner.invoke(app, ["predict", *BASE, "--concurrency", "1"])
    spec = runner.invoke(
        app, ["predict", *BASE, "--concurrency", "1", "--num-speculative-tokens", "3"]
    )
    assert plain.exit_code == 0 and spec.exit_code == 0, spec.output
    assert mean_tpot_ms(spec.output) < 0.85 * mean_tpot_ms(plain.output)


def test_predict_warns_about_fp4_on_hopper() -> None:
    r = runner.invoke(app, ["predict", *BASE, "--concurrency", "1", "--precision", "fp4"])
    assert r.exit_code == 0
    text = " ".join(r.output.split())
    assert "warning: h100-sxm has no fp4 tensor cores" in text and "(bf16 math)" in text


def test_simulate_takes_sparsity_and_speculation() -> None:
    args = ["simulate", *BASE, "--request-rate", "1", "--num-requests", "60"]
    plain = runner.invoke(app, args)
    both = runner.invoke(app, [*args, "--sparsity", "--num-speculative-tokens", "3"])
    assert plain.exit_code == 0 and both.exit_code == 0, both.output
    assert mean_tpot_ms(both.output) < mean_tpot_ms(plain.output)


def test_plan_refuses_a_draft_bigger_than_its_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    usecase = tmp_path / "u.yaml"
    usecase.write_text(
        "model: llama-3.1-8b\ninput: {user: 500}\noutput: 100\nload: {peak_rps: 5}\n"
        "candidates: {speculative_tokens: [0, 3], speculative_method: draft_model, "
        "draft_model: llama-3.1-70b}\n"
    )
    monkeypatch.setattr("sys.argv", ["llmsizer", "plan", str(usecase)])
    with pytest.raises(SystemExit) as e:
        main()
    assert e.value.code not in (0, None)
    text = " ".join(capsys.readouterr().err.split())
    assert "not smaller than the target llama-3.1-8b" in text and "Traceback" not in text


def test_plan_takes_arrival_and_sparsity_flags() -> None:
    r = runner.invoke(
        app,
        [
            "plan", "--model", "llama-3-8b", "--isl", "500", "--osl", "100", "--peak-rps", "5",
            "--ttft-ms", "500", "--tp", "1", "--arrival", "gamma", "--burstiness", "0.5",
            "--sparsity", "off,on",
        ],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "What each lever buys on h100-sxm" in r.output and "gamma arrivals" in r.output
