"""The layouts InferenceX's first TensorRT-LLM DeepSeek B200 scripts chose themselves
(`llmsizer.calibrate.aic_script_layout`), against the scripts' branches written out."""

from __future__ import annotations

import pytest

from llmsizer.calibrate.aic_script_layout import early_trtllm_deepseek, script_layout
from tests.calibrate.test_aic import mapped


@pytest.mark.parametrize(
    ("precision", "tp", "isl", "osl", "clients", "layout"),
    [
        # dsr1_fp4_b200_trt_slurm.sh @ 9596d23d7, TP 8: 1k/1k EP from CONC > 8, DP from 256
        ("fp4", 8, 1024, 1024, 8, (8, 1, 1)),
        ("fp4", 8, 1024, 1024, 16, (8, 8, 1)),
        ("fp4", 8, 1024, 1024, 128, (8, 8, 1)),
        ("fp4", 8, 1024, 1024, 256, (1, 8, 8)),
        # 1k/8k: EP from CONC > 16, DP from 256
        ("fp4", 8, 1024, 8192, 16, (8, 1, 1)),
        ("fp4", 8, 1024, 8192, 32, (8, 8, 1)),
        ("fp4", 8, 1024, 8192, 256, (1, 8, 8)),
        # 8k/1k: EP and DP together from CONC > 32
        ("fp4", 8, 8192, 1024, 32, (8, 1, 1)),
        ("fp4", 8, 8192, 1024, 64, (1, 8, 8)),
        # TP 4: EP from CONC > 32 at every length, DP from 256 (8k/1k: with EP)
        ("fp4", 4, 1024, 1024, 32, (4, 1, 1)),
        ("fp4", 4, 1024, 8192, 64, (4, 4, 1)),
        ("fp4", 4, 1024, 1024, 256, (1, 4, 4)),
        ("fp4", 4, 8192, 1024, 64, (1, 4, 4)),
        # dsr1_fp8_b200_trt_slurm.sh @ 9596d23d7: EP = TP always; DP 1k/1k > 32, else > 64
        ("fp8", 8, 1024, 1024, 32, (8, 8, 1)),
        ("fp8", 8, 1024, 1024, 64, (1, 8, 8)),
        ("fp8", 8, 1024, 8192, 64, (8, 8, 1)),
        ("fp8", 8, 8192, 1024, 128, (1, 8, 8)),
    ],
)
def test_the_layout_is_the_scripts_branch(
    precision: str, tp: int, isl: int, osl: int, clients: int, layout: tuple[int, int, int]
) -> None:
    assert script_layout(precision, tp, isl, osl, clients) == layout


@pytest.mark.parametrize(
    ("engine", "gpu", "measured", "gap", "precision", "script"),
    [
        ("trtllm", "b200", "2025-11-02T23:59:59Z", False, "fp4", "fp4"),
        ("trtllm", "b200", "2025-11-03T18:05:49Z", False, "fp8_block", "fp8"),
        ("trtllm", "b200", "2025-11-03T18:05:50Z", False, "fp4", None),  # 17d5e204f on
        ("trtllm", "b200", "", False, "fp4", None),  # undated: not known to be early
        ("trtllm", "h200", "2025-11-02T23:59:59Z", False, "fp8_block", None),  # B200 scripts
        ("trtllm", "b200", "2025-11-02T23:59:59Z", True, "fp4", None),  # AIC's own runs
        ("sglang", "b200", "2025-11-02T23:59:59Z", False, "fp4", None),
    ],
)
def test_only_inferencex_trtllm_b200_rows_before_the_config_layouts_are_early(
    engine: str, gpu: str, measured: str, gap: bool, precision: str, script: str | None
) -> None:
    assert early_trtllm_deepseek(engine, "deepseek", gpu, measured, gap, precision) == script


def _deepseek_row(measured: str, clients: str) -> dict[str, str]:
    """An InferenceX TensorRT-LLM DeepSeek-R1 NVFP4 row on 8 x B200, 8k/1k, its config's
    layout TP 8 alone (as the export writes an early run)."""
    return {
        "id": f"dsr1_b200_trtllm_fp4_agg_8192x1024_c{clients}",
        "silicon_data_source": f"db-dump/2026-04-27; config_id=91; measured={measured}",
        "backend": "trtllm",
        "backend_version": "",
        "model_path": "deepseek-ai/DeepSeek-R1",
        "gemm_quant_mode": "nvfp4",
        "moe_quant_mode": "nvfp4",
        "isl": "8192",
        "batch_size": clients,
        "tp_size": "8",
        "moe_tp_size": "8",
    }


def test_an_early_row_runs_attention_dp_with_balancing_and_the_scripts_graphs() -> None:
    case = mapped(**_deepseek_row("2025-11-02T00:00:00.000Z", "64"))
    spec, engine = case.spec, case.spec.engine
    assert (spec.tensor_parallel_size, spec.expert_parallel_size, spec.attention_dp_size) == (
        1,
        8,
        8,
    )
    assert engine.attention_dp_enable_balance
    assert engine.max_cudagraph_capture_size == 512  # cuda_graph_config.max_batch_size
    assert engine.max_num_batched_tokens == 8320  # ceil64(64 + 8192 + 64), no floor


def test_a_row_of_the_config_layouts_keeps_its_written_layout() -> None:
    case = mapped(**_deepseek_row("2026-02-03T00:00:00.000Z", "64"))
    spec = case.spec
    assert (spec.tensor_parallel_size, spec.expert_parallel_size, spec.attention_dp_size) == (
        8,
        1,
        1,
    )
    assert spec.engine.max_cudagraph_capture_size == 64  # CONC, the later scripts'
