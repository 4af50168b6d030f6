"""TensorRT-LLM's overlap scheduler on the AIC rows as launched (`llmsizer.calibrate.aic_launch`):
every TensorRT-LLM row ran the PyTorch backend, where it is on by default."""

from __future__ import annotations

import pytest

from llmsizer.calibrate.aic_launch import launch_settings
from llmsizer.sim import EngineConfig
from llmsizer.units import GB


def settings(engine: str, model: str, inferencex: bool) -> dict[str, object]:
    return launch_settings(
        engine=engine,
        model=model,
        precision="fp8",
        tp=8,
        gpu_memory_bytes=80 * GB,
        concurrency=16,
        isl=1024,
        osl=128,
        inferencex=inferencex,
    )


@pytest.mark.parametrize("model", ["llama-3.1-8b", "deepseek-r1", "qwen3-235b-a22b"])
@pytest.mark.parametrize("inferencex", [True, False])
def test_every_tensorrt_llm_launch_runs_the_overlap_scheduler(model: str, inferencex: bool) -> None:
    assert settings("trtllm", model, inferencex)["overlap_scheduler"] is True


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_other_engines_do_not(engine: str) -> None:
    assert "overlap_scheduler" not in settings(engine, "deepseek-r1", True)


def test_the_tensorrt_llm_preset_runs_it_too() -> None:
    assert EngineConfig(engine="trtllm").overlap_scheduler
    assert not EngineConfig(engine="trtllm", overlap_scheduler=False).overlap_scheduler
