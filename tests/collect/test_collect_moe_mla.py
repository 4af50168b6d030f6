"""`collect` times MoE and MLA models (tiny configs shipped beside this test) at the shapes
the performance model prices, and a tiny time budget bounds a run by construction."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from llmsizer.cli import app
from llmsizer.collect.timings import Kind, parse_timings_csv
from llmsizer.perf.calibrated import read_calibration
from llmsizer.specs import get_model

torch = pytest.importorskip("torch")

DATA = Path(__file__).parent / "data"
runner = CliRunner()


def run_collect(model: str, out: Path, *extra: str) -> str:
    args = ["collect", "--model", str(DATA / model), "--quick", "--device", "cpu"]
    r = runner.invoke(app, [*args, "--threads", "1", "--out", str(out), *extra])
    assert r.exit_code == 0, r.output
    return r.output


@pytest.fixture(scope="module")
def moe(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("moe") / "moe.yaml"
    return out, run_collect("tiny-moe", out)


@pytest.fixture(scope="module")
def mla(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("mla") / "mla.yaml"
    return out, run_collect("tiny-mla", out)


def test_moe_runs_its_experts_as_grouped_gemms_of_the_hit_experts(moe: tuple[Path, str]) -> None:
    out, output = moe
    m = get_model(str(DATA / "tiny-moe"))
    assert m.moe is not None and m.moe.num_experts == 16 and m.moe.num_experts_per_tok == 4
    timings = parse_timings_csv(out.with_name("moe.timings.csv").read_text())
    experts = [t for t in timings if t.kind is Kind.EXPERT_GEMM]
    assert {t.name for t in experts} == {"experts.gate_up_proj", "experts.down_proj"}
    for t in experts:
        assert 1 <= t.batch <= 16  # experts hit
        assert t.batch * t.context >= 4 * t.tokens  # every routed copy has a row
    one = next(t for t in experts if t.tokens == 1)
    assert one.batch == 4 and one.context == 1  # one token: its top-4 experts, a row each
    names = {t.name for t in timings if t.kind is Kind.GEMM}
    assert {"router", "qkv_proj", "o_proj", "lm_head"} <= names
    assert "gate_up_proj" not in names  # every layer is an MoE layer
    assert {t.name for t in timings if t.kind is Kind.ELEMENTWISE} == {"moe_layer"}
    cal = read_calibration(out)
    assert 0 < cal.factors["gemm_compute_efficiency"] <= 1
    check = cal.fitted_on["decode_check"]  # the MoE decode loop runs (module check)
    assert check["points"] and all(p["measured_ms"] > 0 for p in check["points"])
    assert "decode check: skipped" not in output


def test_the_moe_decode_loop_sends_each_copy_to_an_expert_and_back() -> None:
    """One step of the tiny MoE decoder at several batches: logits for every sequence, all
    finite (every copy went to an expert and was summed back into its token)."""
    from llmsizer.collect.check import DecodeModel

    m = get_model(str(DATA / "tiny-moe"))
    decoder = DecodeModel(m, 2, torch.device("cpu"))
    for batch in (1, 3, 8):
        x = torch.randn(batch, m.hidden_size, dtype=torch.bfloat16)
        logits = decoder.step(x, 16, decoder.cache(batch, 16), decoder.rotary(16))
        assert logits.shape == (batch, m.vocab_size) and torch.isfinite(logits).all()
    assert len(decoder.experts) == 2 and decoder.experts[0][1].shape[0] == 16


def test_mla_times_its_latent_projections_and_absorbed_decode(mla: tuple[Path, str]) -> None:
    out, _ = mla
    timings = parse_timings_csv(out.with_name("mla.timings.csv").read_text())
    names = {t.name for t in timings if t.kind is Kind.GEMM}
    assert {"q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"} <= names
    # one dense layer and two MoE layers with a shared expert
    assert {"gate_up_proj", "down_proj", "router", "shared_experts.gate_up_proj"} <= names
    decode = [t for t in timings if t.kind is Kind.DECODE_ATTENTION]
    assert decode and all(t.name == "sdpa_decode_latent" for t in decode)
    m = get_model(str(DATA / "tiny-mla"))
    assert m.mla is not None
    per_pair = 2 * 4 * (64 + 16) + 2 * 4 * 64  # heads x (latent + rope), heads x latent
    assert all(t.flops == t.batch * t.context * per_pair for t in decode)
    assert all(t.bytes >= t.batch * t.context * (64 + 16) * 2 for t in decode)  # the latent
    # timed, not fitted: the decode attention's bandwidth keeps the engine's prior
    cal = read_calibration(out)
    assert "attention_bandwidth_efficiency" not in cal.factors
    assert "attention_bandwidth_efficiency" in cal.fitted_on["carried_factors"]


def test_predict_accepts_the_mla_file(mla: tuple[Path, str], tmp_path: Path) -> None:
    out, _ = mla
    args = ["predict", "--model", str(DATA / "tiny-mla"), "--calibration", str(out)]
    r = runner.invoke(app, [*args, "--isl", "64", "--osl", "8", "--concurrency", "2"])
    assert r.exit_code == 0, r.output


def test_a_tiny_budget_times_one_point_of_each_stage(tmp_path: Path) -> None:
    from llmsizer.collect import QUICK, collect, find_device
    from llmsizer.collect.run import kernel_stages

    model = get_model(str(DATA / "tiny-moe"))
    device = find_device("cpu", None)
    said: list[str] = []
    result = collect(model, device, QUICK, check=False, budget_s=1e-3, say=said.append)
    stages = kernel_stages(model, QUICK, device, "bf16")
    assert len(result.timings) == len(stages)  # the first point of each, no more
    assert len(result.timings) < sum(planned for _, planned, _ in stages)
    assert any("1 of 20 timings" in s and "about 0 s left" in s for s in said)  # progress
    info = result.calibration.fitted_on
    assert info["budget_s"] == 1e-3 and info["num_timings"] == len(stages)


def test_the_cli_default_budget_is_five_minutes() -> None:
    import inspect

    from llmsizer.cli.collect import collect as command
    from llmsizer.collect import DEFAULT_BUDGET_S

    assert inspect.signature(command).parameters["budget_s"].default == DEFAULT_BUDGET_S == 300
