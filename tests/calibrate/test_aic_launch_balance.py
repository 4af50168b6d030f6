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
