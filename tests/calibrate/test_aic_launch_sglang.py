"""The SGLang AIC rows as their InferenceX scripts launched them (`llmsizer.calibrate.
aic_launch`): the projected KV admission of every script (`--disable-radix-cache`, the
client's `--ignore-eos`), and Qwen3.5's own B300 scripts."""

from __future__ import annotations

from typing import Any

import pytest

from llmsizer.calibrate.aic_launch import launch_settings
from llmsizer.units import GB


def sglang(**row: Any) -> dict[str, Any]:
    launch: dict[str, Any] = {
        "engine": "sglang",
        "model": "qwen3.5-397b-a17b",
        "precision": "fp8",
        "tp": 4,
        "gpu_memory_bytes": 180 * GB,
        "concurrency": 64,
        "isl": 1024,
        "inferencex": True,
        "version": "0.5.9",
    }
    return launch_settings(**(launch | row))


@pytest.mark.parametrize("model", ["deepseek-r1", "qwen3.5-397b-a17b", "glm-5"])
@pytest.mark.parametrize("inferencex", [True, False])
def test_every_inferencex_sglang_row_admits_by_the_projected_kv(
    model: str, inferencex: bool
) -> None:
    got = sglang(model=model, inferencex=inferencex).get("kv_reservation")
    assert got == ("projected" if inferencex else None)


def test_qwen_fp8_on_b300_ran_its_own_script() -> None:
    """`qwen3.5_fp8_b300.sh` @ c0f62a2e (image v0.5.10.post1): chunk 16384, a receive
    interval of 10 at every concurrency, CONC running, memory 0.8."""
    b300 = sglang(gpu_memory_bytes=288 * GB, version="0.5.10.post1")
    assert b300["max_num_batched_tokens"] == 16384
    assert b300["scheduler_recv_interval"] == 10
    assert b300["max_num_seqs"] == 64
    assert b300["gpu_memory_utilization"] == 0.8
    b200 = sglang()
    assert (b200["max_num_batched_tokens"], b200["scheduler_recv_interval"]) == (32768, 30)
    assert (b200["max_num_seqs"], b200["gpu_memory_utilization"]) == (128, 0.82)


def test_b300_rows_of_an_older_image_keep_the_b200_script() -> None:
    """The 0.5.9 B300 rows were measured before the B300 scripts existed (2026-04-17)."""
    assert sglang(gpu_memory_bytes=288 * GB)["max_num_batched_tokens"] == 32768


def test_qwen_nvfp4_memory_fraction_by_gpu() -> None:
    """`qwen3.5_fp4_b200.sh` @ 20073baf: 0.85; `qwen3.5_fp4_b300.sh` @ 8acbd08b: 0.8."""
    assert sglang(precision="fp4")["gpu_memory_utilization"] == 0.85
    b300 = sglang(precision="fp4", gpu_memory_bytes=288 * GB, version="0.5.10.post1")
    assert b300["gpu_memory_utilization"] == 0.8
    assert b300["max_num_batched_tokens"] == 32768


def test_qwen_bf16_on_b300_ran_the_b200_script() -> None:
    """`qwen3.5_bf16_b300.sh` @ 32274d6c1 (the rows' image v0.5.10.post1, 2026-04-18) is
    `qwen3.5_bf16_b200.sh` line for line: memory 0.82, chunk 32768, 128 running, a receive
    interval of 30 from CONC 16; not the FP8 / NVFP4 B300 scripts' 0.8."""
    b300 = sglang(precision="bf16", gpu_memory_bytes=288 * GB, version="0.5.10.post1")
    assert b300 == sglang(precision="bf16", gpu_memory_bytes=288 * GB, version="nightly-dev")
    assert b300["gpu_memory_utilization"] == 0.82
    assert (b300["max_num_batched_tokens"], b300["scheduler_recv_interval"]) == (32768, 30)
    assert b300["max_num_seqs"] == 128
