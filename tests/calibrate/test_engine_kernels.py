"""What an AIC row's engine version ran (`calibrate.engine_kernels`): the version table
selects the launch of the script that ran that version, and changes no other row."""

from __future__ import annotations

import csv

import pytest

from llmsizer.calibrate import aic, engine_kernels
from llmsizer.calibrate.aic import AicCase, map_aic_row
from llmsizer.calibrate.engine_kernels import (
    VERSION_LAUNCHES,
    apply_version_launch,
    linear_kernel,
    separate_gdn_projections,
)
from llmsizer.instance import make_instance
from llmsizer.perf.launches import gdn_projection_launches
from tests.calibrate.test_aic import make_row
from tests.conftest import shared_path


def minimax(version: str, **changes: str) -> AicCase:
    row = make_row(
        id="minimaxm2_5_b200_vllm_fp8_agg_1024x1024_c32",
        model_path="MiniMaxAI/MiniMax-M2.5",
        backend_version=version,
        tp_size="2",
        moe_tp_size="2",
        batch_size="32",
        **changes,
    )
    case = map_aic_row(row, check_fit=False)
    assert isinstance(case, AicCase), case
    return case


def test_vllm_0_17_minimax_fp8_runs_the_triton_experts_bf16_kv_and_expert_parallel() -> None:
    spec = minimax("0.17.0").spec
    assert spec.moe_backend == "triton"
    assert spec.kv_cache_dtype is None  # the activations' BF16 (no --kv-cache-dtype fp8)
    assert spec.expert_parallel_size == 2  # --enable-expert-parallel at every EP_SIZE
    assert spec.gpu_memory_utilization == 0.95
    # neither --max-num-batched-tokens 2 x ISL nor --max-cudagraph-capture-size 2048
    assert spec.engine.max_num_batched_tokens == 8192
    assert spec.engine.max_cudagraph_capture_size is None


def test_vllm_0_19_minimax_fp8_runs_the_later_script_as_before() -> None:
    spec = minimax("0.19.0").spec
    assert spec.moe_backend is None
    assert spec.kv_cache_dtype == "fp8"
    assert spec.expert_parallel_size == 1
    assert spec.engine.max_num_batched_tokens == 2 * 1024
    assert spec.engine.max_cudagraph_capture_size == 2048


@pytest.mark.parametrize(
    "changes",
    [{"system": "b300_sxm"}, {"gemm_quant_mode": "nvfp4", "moe_quant_mode": "nvfp4"},
     {"backend": "sglang"}, {"backend_version": "0.18.0"}],
)  # fmt: skip
def test_a_row_outside_the_table_keeps_its_launch(changes: dict[str, str]) -> None:
    version = changes.pop("backend_version", "0.17.0")
    assert minimax(version, **changes).spec.moe_backend is None


def test_the_table_names_what_it_selects_with_a_source() -> None:
    for launch in VERSION_LAUNCHES:
        assert launch.source
        assert set(launch.settings) <= aic.PredictSpec.input_keys()
    fields = {"engine": "vllm", "model": "minimax-m2.5", "gpu": "b200", "precision": "fp8",
              "tp": 4, "max_num_batched_tokens": 2048, "kv_cache_dtype": "fp8"}  # fmt: skip
    assert apply_version_launch(fields, "0.19.0") == fields
    old = apply_version_launch(fields, " 0.17.0 ")
    assert "max_num_batched_tokens" not in old
    assert old["expert_parallel_size"] == 4 and old["moe_backend"] == "triton"


@pytest.mark.shared
def test_only_the_rows_of_a_version_in_the_table_change(monkeypatch) -> None:
    """Every row of the AIC file mapped with and without the table: the specs differ exactly
    on the rows whose engine, model, GPU, precision and version the table names."""
    path = shared_path("calibration", "aic_silicon_calibration.csv")
    keys = {(v.engine, v.model, v.gpu, v.precision, v.version) for v in VERSION_LAUNCHES}
    with path.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["mode"] == "agg"]
    cases = [map_aic_row(row, check_fit=False) for row in rows]
    monkeypatch.setattr(engine_kernels, "VERSION_LAUNCHES", ())
    changed, selected = set(), set()
    for row, case in zip(rows, cases, strict=True):
        if not isinstance(case, AicCase):
            continue
        s = case.spec
        if (s.preset, s.model, s.gpu, s.precision, row["backend_version"].strip()) in keys:
            selected.add(row["id"])
        plain = map_aic_row(row, check_fit=False)
        assert isinstance(plain, AicCase)
        if plain.spec != s:
            changed.add(row["id"])
    assert len(selected) == 40  # the vLLM 0.17.0 MiniMax-M2.5 FP8 B200 rows
    assert changed == selected


def test_the_rows_tensorrt_llm_versions_ran_it_for_block_fp8_on_sm100_only() -> None:
    fp8b = "fp8_block"
    assert linear_kernel("trtllm", "b200", fp8b, "1.2.0rc6.post3") == "fp8_swap_ab"
    assert linear_kernel("trtllm", "gb300", fp8b, "1.0.0rc3") == "fp8_swap_ab"
    assert linear_kernel("trtllm", "b200", fp8b, "") == "fp8_swap_ab"  # 2025, no image
    assert linear_kernel("trtllm", "b200", fp8b, "1.3.0rc10") is None  # fixed by then
    assert linear_kernel("trtllm", "gb200", fp8b, "0.8.1.post1") == "fp8_swap_ab"  # Dynamo
    assert linear_kernel("trtllm", "gb200", fp8b, "0.9.0") is None  # Dynamo with 1.3.0rc1
    assert linear_kernel("trtllm", "h200-sxm", fp8b, "1.2.0rc6") is None  # CUTLASS
    assert linear_kernel("trtllm", "rtx-pro-6000", fp8b, "1.2.0rc6") is None  # SM120
    assert linear_kernel("trtllm", "b200", "fp8", "1.2.0rc6") is None  # per-tensor
    assert linear_kernel("vllm", "b200", fp8b, "0.19.0") is None
    assert linear_kernel("sglang", "b200", fp8b, "0.5.9") is None


def test_a_tensorrt_llm_deepseek_fp8_row_on_b200_names_the_kernel_and_vllm_does_not() -> None:
    row = {"model_path": "deepseek-ai/DeepSeek-R1", "tp_size": "8", "moe_tp_size": "8"}
    trt = map_aic_row(
        make_row(**row, gemm_quant_mode="fp8", backend="trtllm", backend_version="1.2.0rc6.post2")
    )
    assert isinstance(trt, AicCase) and trt.spec.linear_kernel == "fp8_swap_ab"
    vllm = map_aic_row(make_row(**row, gemm_quant_mode="fp8", backend="vllm"))
    assert isinstance(vllm, AicCase) and vllm.spec.linear_kernel is None


QWEN35 = "qwen3.5-397b-a17b"


@pytest.mark.parametrize(
    ("version", "separate"),
    [("0.5.9", True), ("0.5.10.post1", False), ("0.5.11", False),
     ("nightly-dev-20260216-d3bae71e", True), ("nightly-dev-20260402-d7256eb6", False),
     ("nightly-dev-cu13-20260319-00000000", True), ("nightly-dev-cu13-20260320-00000000", False),
     ("nightly-dev", True), ("", False), ("main", False)],
)  # fmt: skip
def test_sglang_ran_qwen3_5_s_four_projections_before_0_5_10(version: str, separate: bool) -> None:
    # 0.5.9 (wheel of 2026-02-23): four GEMMs; PR 21019 (2026-03-20) on: merged and split;
    # AIC's bare `nightly-dev` Qwen3.5 rows ran d3bae71e; unread: the current release's
    assert separate_gdn_projections("sglang", QWEN35, version) is separate


def test_other_engines_and_models_keep_the_merged_count() -> None:
    assert not separate_gdn_projections("vllm", QWEN35, "0.5.9")
    assert not separate_gdn_projections("sglang", "deepseek-r1", "0.5.9")
    assert not separate_gdn_projections("sglang", "glm-5", "nightly-dev")


def _qwen_row(version: str, quant: str) -> AicCase:
    row = make_row(
        id="qwen3_5_b200_sglang_agg_1024x1024_c4", backend="sglang", backend_version=version,
        model_path="Qwen/Qwen3.5-397B-A17B", tp_size="8", moe_tp_size="8", batch_size="4",
        precision="fp8" if quant else "bf16", gemm_quant_mode=quant, moe_quant_mode=quant,
    )  # fmt: skip
    case = map_aic_row(row, check_fit=False)
    assert isinstance(case, AicCase), case
    return case


@pytest.mark.parametrize(("version", "quant"), [("0.5.9", "fp8"), ("nightly-dev", "")])
def test_a_qwen3_5_row_of_an_older_image_runs_the_four_gemms(version: str, quant: str) -> None:
    old = make_instance(_qwen_row(version, quant).spec).deployment
    new = make_instance(_qwen_row("0.5.10.post1", quant).spec).deployment
    assert old.separate_gdn_projections and not new.separate_gdn_projections
    extra = gdn_projection_launches(old.model, True, old.input_quant)
    assert extra == (90 if quant else 45)  # FP8: z's input quantisation too


@pytest.mark.shared
def test_exactly_the_qwen3_5_rows_of_the_older_images_run_the_four_gemms() -> None:
    path = shared_path("calibration", "aic_silicon_calibration.csv")
    with path.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["mode"] == "agg"]
    runs: dict[str, int] = {}
    for row in rows:
        case = map_aic_row(row, check_fit=False)
        if isinstance(case, AicCase) and case.spec.separate_gdn_projections:
            assert case.spec.model == QWEN35 and case.spec.preset == "sglang"
            runs[row["backend_version"]] = runs.get(row["backend_version"], 0) + 1
    assert runs == {"0.5.9": 176, "nightly-dev": 45, "nightly-dev-20260216-d3bae71e": 15}
