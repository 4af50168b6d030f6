"""Attention-DP balancing on the launches that set it (`llmsizer.calibrate.aic_launch`)."""

from __future__ import annotations

import pytest

from llmsizer.calibrate.aic_launch import launch_settings
from llmsizer.units import GB


def settings(engine: str, model: str, attention_dp: int) -> dict[str, object]:
    return launch_settings(
        engine=engine,
        model=model,
        precision="fp4",
        tp=8,
        gpu_memory_bytes=180 * GB,
        concurrency=256,
        isl=1024,
        osl=1024,
        inferencex=True,
        version="1.2.0rc6.post2",
        attention_dp=attention_dp,
    )


def test_tensorrt_llm_deepseek_with_attention_dp_balances_as_the_scripts_launch_it() -> None:
    got = settings("trtllm", "deepseek-r1", attention_dp=8)
    # dsr1_fp{4,8}_b200_trt.sh: attention_dp_config {enable_balance: true, timeout_iters: 60,
    # batching_wait_iters: 0}
    assert got["attention_dp_enable_balance"] is True
    assert (got["attention_dp_timeout_iters"], got["attention_dp_batching_wait_iters"]) == (60, 0)


@pytest.mark.parametrize(
    ("engine", "model", "attention_dp"),
    [("trtllm", "deepseek-r1", 1), ("vllm", "minimax-m2.5", 2), ("trtllm", "llama-3.3-70b", 1)],
)
def test_other_launches_do_not_balance(engine: str, model: str, attention_dp: int) -> None:
    assert "attention_dp_enable_balance" not in settings(engine, model, attention_dp)


@pytest.mark.parametrize(
    ("version", "tokens"),
    [("", 1344), ("1.1.0rc2.post2", 1344), ("1.2.0rc6.post2", 8192), ("1.3.0rc1", 8192)],
)
def test_deepseek_token_budget_has_its_8192_floor_only_from_2026_01_21(
    version: str, tokens: int
) -> None:
    """dsr1 scripts: ceil64(CONC + ISL + 64) = ceil64(256 + 1024 + 64) = 1344 before the
    floor (image "" and 1.1.x rows, measured to 2026-01-14), max(8192, that) after."""
    got = launch_settings(
        engine="trtllm", model="deepseek-r1", precision="fp4", tp=8, gpu_memory_bytes=180 * GB,
        concurrency=256, isl=1024, osl=1024, inferencex=True, version=version,
    )  # fmt: skip
    assert got["max_num_batched_tokens"] == tokens


@pytest.mark.parametrize(
    ("precision", "tp", "concurrency", "interval"),
    [("fp4", 8, 64, 30), ("fp4", 4, 8, 10), ("fp8", 8, 16, 30), ("fp8", 4, 32, 10)],
)
def test_sglang_deepseek_reads_as_the_scripts_launch_it(
    precision: str, tp: int, concurrency: int, interval: int
) -> None:
    """dsr1_fp4_b200.sh (since 2025-09) and dsr1_fp8_b200.sh set --scheduler-recv-interval 30
    from CONC 16, else 10; the FP8 script's TP4 branch always 10."""
    got = launch_settings(
        engine="sglang", model="deepseek-r1", precision=precision, tp=tp,
        gpu_memory_bytes=180 * GB, concurrency=concurrency, isl=8192, osl=1024, inferencex=True,
    )  # fmt: skip
    assert got["scheduler_recv_interval"] == interval
