"""Issue 14: each input that once crashed, hung or was taken silently now gives a clear error
(or, for the plan's length band, a note), naming the file or flag, the value and what is
allowed. One test per failure, at the reader where the bad value enters, and for the CLI
the exit status 2 with one line, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from llmsizer.calibrate.readers import import_results
from llmsizer.calibrate.step_calibration import load_step_calibration
from llmsizer.cli import main
from llmsizer.config import ConfigError, load_scenario, load_usecase
from llmsizer.instance import DeploymentSpec, PredictSpec, predict
from llmsizer.perf.calibrated import load_calibration
from llmsizer.sizing.probe import Lengths
from llmsizer.sizing.uncertainty import _within_budget
from llmsizer.specs import get_model
from llmsizer.workload import TraceError, make_workload, read_trace
from llmsizer.workload.lengths import MAX_TOKENS

REFERENCE = Path(__file__).parents[1] / "examples" / "reference-server" / "calibration"
FITTED = REFERENCE / "calibration.yaml"
HUGE = 2**63
USECASE = {"model": "llama-3.1-8b", "input": {"user": 100}, "output": 10, "load": {"peak_rps": 1}}


def run_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str]:
    """(exit status, stderr) of `llmsizer *args` through the real entry point."""
    monkeypatch.setattr("sys.argv", ["llmsizer", *args])
    with pytest.raises(SystemExit) as e:
        main()
    return int(e.value.code or 0), capsys.readouterr().err


# --- lengths of 2^63 and more, inf and 1e400 --------------------------------------------


@pytest.mark.parametrize("key", ["isl", "osl"])
def test_a_length_of_2_to_the_63_is_a_config_error(key: str) -> None:
    with pytest.raises(ConfigError, match=rf"workload.{key}.value = {HUGE}.*10000000"):
        load_scenario(None, {"workload": {key: HUGE}})


def test_a_huge_length_in_a_scenario_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(f"workload: {{isl: {HUGE}, num_requests: 1}}\n")
    with pytest.raises(ConfigError, match=r"s.yaml"):
        load_scenario(path)


def test_an_output_of_a_billion_tokens_is_refused_before_it_runs() -> None:
    with pytest.raises(ConfigError, match=r"osl.value = 1000000000"):
        load_scenario(None, {"workload": {"osl": 10**9, "num_requests": 1}})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (f"ContextTokens,GeneratedTokens\n{HUGE},5\n", "ContextTokens must be 1 to "),
        (f"ContextTokens,GeneratedTokens\n5,{HUGE}\n", "GeneratedTokens must be 1 to "),
    ],
)
def test_a_huge_length_in_an_azure_trace_names_its_line(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "t.csv"
    rows = text.splitlines()
    path.write_text(f"TIMESTAMP,{rows[0]}\n2023-11-16 18:15:46.6805900,{rows[1]}\n")
    with pytest.raises(TraceError, match=rf"t.csv:2: {message}"):
        read_trace(path)


def test_a_huge_length_in_a_mooncake_trace_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    row = {"timestamp": 0, "input_length": HUGE, "output_length": 1}
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(TraceError, match=r"t.jsonl:1: input_length must be 1 to"):
        read_trace(path)


def test_lognormal_tails_stay_below_max_tokens() -> None:
    from llmsizer.workload import lognormal_lengths

    draws = lognormal_lengths(1000, MAX_TOKENS, 1e12, np.random.default_rng(0))
    assert draws.min() >= 1 and draws.max() <= MAX_TOKENS


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"input": {"user": float("inf")}}, "input.user = inf: Input should be a finite"),
        ({"load": {"peak_rps": float("inf")}}, "load.peak_rps = inf"),
        ({"load": {"peak_rps": float("nan")}}, "load.peak_rps = nan"),
        ({"output": HUGE}, "output"),
    ],
)
def test_non_finite_or_huge_use_case_values(override: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_usecase(None, {**USECASE, **override})


def test_documents_1e400_in_a_use_case_file(tmp_path: Path) -> None:
    path = tmp_path / "u.yaml"
    path.write_text(yaml.safe_dump({**USECASE, "input": {"user": 10}}) + "")
    path.write_text(path.read_text().replace("user: 10", "user: 10\n  documents: 1e400"))
    with pytest.raises(ConfigError, match=r"u.yaml.*\n.*input.documents"):
        load_usecase(path)


# --- files of the wrong shape ------------------------------------------------------------


def test_a_config_json_holding_a_list(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"config.json' must hold a JSON object, not a"):
        get_model(path)


@pytest.mark.parametrize("text", ["{not json", "\x00\xff\xfe binary"])
def test_a_config_json_that_is_not_json_names_the_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(ValueError, match=r"model config '.*config.json' is not"):
        get_model(path)


@pytest.mark.parametrize("field", ["num_key_value_heads", "head_dim", "hidden_size"])
def test_a_zero_count_in_a_config_json(tmp_path: Path, field: str) -> None:
    config = {
        "hidden_size": 64,
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "vocab_size": 100,
        "intermediate_size": 128,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, field: 0}))
    with pytest.raises(ValueError, match=rf"{field} = 0, not 1 to"):
        get_model(path)


def test_a_config_json_field_of_the_wrong_type(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"hidden_size": [64], "num_attention_heads": 4}))
    with pytest.raises(ValueError, match=r"hidden_size = \[64\], not 1 to"):
        get_model(path)


def test_an_engine_preset_that_is_a_mapping() -> None:
    with pytest.raises(ConfigError, match=r"engine.engine: Input should be 'vllm'"):
        load_scenario(None, {"engine": {"engine": {}}})


@pytest.mark.parametrize("content", [b"not json at all", b"\x89PNG\r\n\x1a\n\x00\xff", b"NaN"])
def test_result_files_that_are_not_json_name_the_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "run.json"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=r"run.json"):
        import_results(path)


def test_a_result_file_with_fields_of_the_wrong_type(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"ttfts": 5, "input_lens": None, "output_lens": 1, "itls": 2}))
    with pytest.raises(ValueError, match=r"run.json: .*vllm"):
        import_results(path)


def test_the_file_calibrate_writes_is_not_taken_for_efficiency_factors() -> None:
    with pytest.raises(ValueError, match=r"kind: fitted_step_cost file; this needs a kind: eff"):
        load_calibration(FITTED)


def test_efficiency_factors_are_not_taken_for_a_fitted_step_cost(tmp_path: Path) -> None:
    path = tmp_path / "eff.yaml"
    path.write_text("kind: efficiency_factors\nengine: vllm\nfactors: {}\n")
    with pytest.raises(ValueError, match=r"kind: efficiency_factors file; this needs a kind: fit"):
        load_step_calibration(path)


def test_a_sweep_without_records_names_the_flag(tmp_path: Path) -> None:
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps([{"tool": "llmsizer", "max_concurrency": 1}]))
    with pytest.raises(ValueError, match=r"--records"):
        import_results(path)


# --- the context window ------------------------------------------------------------------


def test_predict_refuses_a_prompt_past_the_context_window() -> None:
    spec = PredictSpec(model="llama-3.1-8b", gpu="h100-sxm", isl=200_000, osl=10, concurrency=1)
    with pytest.raises(ValueError, match=r"200010 tokens exceed .*131072 .*max_position_emb"):
        predict(spec)


def test_simulate_with_a_model_refuses_a_prompt_past_the_context_window() -> None:
    scenario = load_scenario(
        None,
        {
            "workload": {"isl": 200_000, "osl": 10, "num_requests": 1},
            "step_cost": {"kind": "gpu", "model": "llama-3.1-8b", "gpu": "h100-sxm"},
        },
    )
    with pytest.raises(ValueError, match=r"request 0 = 200000 \+ 10 = 200010 tokens exceed"):
        scenario.build_engine(make_workload(scenario.workload))


# --- the plan's uncertainty band ---------------------------------------------------------


def _lengths(prompts: list[int]) -> Lengths:
    prompt = np.array(prompts, dtype=np.int64)
    return Lengths(prompt, np.ones_like(prompt), "test")


def test_a_length_variant_over_the_step_budget_is_left_out_with_a_note() -> None:
    trtllm = DeploymentSpec(model="llama-3.1-8b", gpu="h100-sxm", engine="trtllm")
    far_over = ("spread", _lengths([1000, 30_000]))
    fitting, notes = _within_budget([far_over], trtllm)
    assert fitting == []
    assert notes == (
        "spread: not tried (prompts up to 30000 tokens, over trtllm's 8192-token step budget "
        "without chunked prefill)",
    )


def test_a_length_variant_just_over_the_budget_is_cut_and_says_so() -> None:
    trtllm = DeploymentSpec(model="llama-3.1-8b", gpu="h100-sxm", engine="trtllm")
    fitting, notes = _within_budget([("spread", _lengths([8000] * 99 + [8300]))], trtllm)
    ((label, cut),) = fitting
    assert notes == () and label == "spread, prompts cut to 8192" and cut.prompt.max() == 8192


def test_chunked_prefill_runs_every_length_variant() -> None:
    vllm = DeploymentSpec(model="llama-3.1-8b", gpu="h100-sxm", engine="vllm")
    variants = [("spread", _lengths([1000, 30_000]))]
    assert _within_budget(variants, vllm) == (variants, ())


# --- the command line: exit 2, one line, no traceback -----------------------------------

PREDICT = ["predict", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--concurrency", "1"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["simulate", "--isl", str(HUGE), "--num-requests", "1"], "less than or equal to"),
        (
            ["simulate", "--osl", "1000000000", "--num-requests", "1"],
            "--osl 1000000000: Input should be less than or equal to 10000000",
        ),
        (["simulate", "--num-requests", "1", "--plot", "x.jpg"], "--plot x.jpg: the timeline"),
        ([*PREDICT, "--isl", "200000", "--osl", "10"], "max_position_embeddings"),
        (
            ["plan", "--model", "llama-3.1-8b", "--isl", "inf", "--osl", "1"],
            "--isl inf: Input should be a finite number",
        ),
        (
            ["plan", "--model", "llama-3.1-8b", "--isl", "1", "--osl", "1", "--peak-rps", "inf"],
            "--peak-rps inf: Input should be a finite number",
        ),
    ],
)
def test_flags_out_of_range_exit_2(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    code, err = run_cli(monkeypatch, capsys, *args)
    assert code == 2 and "Traceback" not in err
    assert message in " ".join(err.split())


@pytest.mark.parametrize("tolerance", ["-5", "nan", "inf"])
def test_compare_refuses_a_tolerance_that_is_no_percentage(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tolerance: str
) -> None:
    light = [str(REFERENCE / "poisson-light.json"), str(REFERENCE / "predicted-light.json")]
    code, err = run_cli(monkeypatch, capsys, "compare", *light, "--tolerance", tolerance)
    assert code == 2 and f"--tolerance must be a percentage >= 0, got {tolerance}" in err


def test_compare_refuses_points_of_different_loads(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    measured, predicted = tmp_path / "m.json", tmp_path / "p.json"
    measured.write_text(json.dumps({"request_rate": 1, "mean_ttft_ms": 5}))
    predicted.write_text(json.dumps({"request_rate": 6, "mean_ttft_ms": 5}))
    code, err = run_cli(monkeypatch, capsys, "compare", str(measured), str(predicted))
    assert code == 2
    assert "measured at Poisson 1 req/s but predicted at Poisson 6 req/s" in " ".join(err.split())


@pytest.mark.parametrize("content", ["{}", '{"tool": "something else"}', "[]"])
def test_compare_refuses_empty_or_unrelated_files(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    content: str,
) -> None:
    path = tmp_path / "x.json"
    path.write_text(content)
    code, err = run_cli(monkeypatch, capsys, "compare", str(path), str(path))
    assert code == 2 and "x.json" in err and "Traceback" not in err


def test_compare_names_a_binary_file(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(b"\x00\xa4\xff")
    code, err = run_cli(monkeypatch, capsys, "compare", str(path), str(path))
    assert code == 2 and "x.json' is not UTF-8 text" in " ".join(err.split())


def test_predict_cases_exits_2_when_every_case_failed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cases, out = tmp_path / "cases.csv", tmp_path / "out.csv"
    cases.write_text("model,gpu,isl,osl,concurrency\nnope,h100-sxm,10,10,1\n")
    code, err = run_cli(monkeypatch, capsys, "predict", "--cases", str(cases), "--out", str(out))
    assert code == 2 and "every case of" in " ".join(err.split())
    assert "nope" in out.read_text()


@pytest.mark.parametrize(
    ("content", "message"), [(b"", "has no rows"), (b"a,b\n1,2,3\n", "more fields than the header")]
)
def test_predict_cases_that_are_no_cases(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    content: bytes,
    message: str,
) -> None:
    cases = tmp_path / "cases.csv"
    cases.write_bytes(content)
    out = str(tmp_path / "o.csv")
    code, err = run_cli(monkeypatch, capsys, "predict", "--cases", str(cases), "--out", out)
    assert code == 2 and message in " ".join(err.split())


def test_plan_without_limits_shows_its_own_ttft_percentile() -> None:
    from llmsizer.report.plan_text import _pareto

    point = {"label": "a", "rate_per_gpu_rps": 1.0, "p99_ttft_ms": 12.0, "meets": True}
    table = _pareto({"gpu": "g", "pareto": [point]}, {"limits": []})
    assert [c.header for c in table.columns] == [
        "configuration",
        "req/s/GPU",
        "p99_ttft_ms",
        "meets",
    ]


# --- messages name the flag as typed, or the YAML key for file input ---------------------

PRED = ["predict", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "10", "--osl", "5"]
FIT = ["predict", "--calibration", str(FITTED), "--isl", "4", "--osl", "4", "--concurrency", "1"]
NOWHERE = ["--out", "/nonexistent/calibration.yaml"]  # never written: the flags fail first
PLAN = ["plan", "--model", "llama-3.1-8b", "--isl", "9", "--osl", "5", "--peak-rps", "1"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["simulate", "--osl", "0"], "--osl 0: Input should be greater than or equal to 1"),
        (["simulate", "--gpu", "h100-sxm"], "--model: required, not given"),
        (
            ["simulate", "--max-num-batched-tokens", "16"],
            "--max-num-batched-tokens (16) must be >= --max-num-seqs (256)",
        ),
        (
            ["simulate", "--burstiness", "0.5"],
            "--burstiness=0.5 applies only to --arrival gamma, not 'poisson'",
        ),
        (["simulate", "--step-time-ms", "5", "--gpu", "h100-sxm"], "give one or the other"),
        ([*PRED, "--concurrency", "-2"], "--concurrency -2: Input should be greater than"),
        ([*PRED, "--engine", "tgi", "--concurrency", "1"], "--engine tgi: Input should be 'vllm'"),
        ([*PRED], "give exactly one load: --concurrency, --request-rate, or --offline"),
        ([*FIT, "--request-rate", "2"], "give exactly one load: --concurrency or --request-rate"),
        (
            ["plan", "--model", "llama-3.1-8b", "--isl", "10", "--osl", "5"],
            "--peak-rps/--average-rps/--daily-active-users: required, not given",
        ),
        (
            [*PLAN, "--burstiness", "0.3"],
            "--burstiness applies to gamma arrivals: set --arrival gamma",
        ),
        ([*PLAN, "--precision", "int3,fp8"], "--precision int3,fp8: unknown precision 'int3'"),
        (
            [
                "calibrate",
                str(REFERENCE / "round1" / "sweep.json"),
                "--max-num-seqs",
                "0",
                *NOWHERE,
            ],
            "--max-num-seqs 0: Input should be greater than or equal to 1",
        ),
    ],
)
def test_flag_errors_name_the_flag_as_typed(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    from tests.fuzz_targets import internal_names

    code, err = run_cli(monkeypatch, capsys, *args)
    text = " ".join(err.split())
    assert code == 2 and message in text, text
    assert not internal_names(args, err)


def test_a_scenario_file_keeps_its_keys_beside_the_flags(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("engine: {max_num_seqs: 0}\n")
    code, err = run_cli(monkeypatch, capsys, "simulate", str(path), "--isl", "-3")
    text = " ".join(err.split())
    assert code == 2 and f"invalid scenario '{path}':" in text
    assert "engine.max_num_seqs = 0" in text and "--isl -3: Input should be" in text


def test_sparsity_on_a_device_without_sparse_tensor_cores_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from tests.collect.test_device_file import _write

    device = str(_write(tmp_path))
    args = [*PRED[:3], "--gpu", device, *PRED[5:], "--concurrency", "1", "--sparsity"]
    code, err = run_cli(monkeypatch, capsys, *args)
    assert code == 2 and "has none, so sparse weights would run as dense math" in " ".join(
        err.split()
    )


def test_flag_names_never_replace_words_in_paths_or_quoted_values() -> None:
    from llmsizer.errors import name_flags

    flags = {"workload.trace": "--trace", "workload.arrival": "--arrival"}
    msg = "arrival 'trace' needs a trace file, not '/data/trace.csv' or trace.csv"
    assert name_flags(msg, flags, under=["workload"]) == (
        "--arrival 'trace' needs a --trace file, not '/data/trace.csv' or trace.csv"
    )
    assert name_flags(
        "load.burstiness needs load.arrival gamma", {"load.arrival": "--arrival"}
    ) == ("load.burstiness needs --arrival gamma")
