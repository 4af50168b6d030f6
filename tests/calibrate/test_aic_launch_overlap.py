"""Scheduling one step ahead on the AIC rows as launched (`llmsizer.calibrate.aic_launch`):
every TensorRT-LLM row ran the PyTorch backend, where the overlap scheduler is on by default;
every vLLM row with async scheduling (the default since vllm-project/vllm#27614, set by the
Llama scripts), every SGLang row with the overlap schedule (the default): as the presets."""

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
@pytest.mark.parametrize("model", ["llama-3.1-70b", "deepseek-r1", "minimax-m2.5"])
@pytest.mark.parametrize("inferencex", [True, False])
def test_vllm_and_sglang_launches_schedule_one_step_ahead_too(
    engine: str, model: str, inferencex: bool
) -> None:
    assert settings(engine, model, inferencex)["overlap_scheduler"] is True


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_the_presets_run_as_the_rows_were_launched(engine: str) -> None:
    """Each preset is its engine's default (`llmsizer.sim.config`), so a prediction is
    simulated under the scheduler its factors were fitted under."""
    assert EngineConfig(engine=engine).overlap_scheduler is True


def test_the_tensorrt_llm_preset_runs_it_too() -> None:
    assert EngineConfig(engine="trtllm").overlap_scheduler
    assert not EngineConfig(engine="trtllm", overlap_scheduler=False).overlap_scheduler
