"""The engine's CUDA-graph settings reach the step model, and bad ones are refused clearly."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from llmsizer.calibrate.aic_launch import cuda_graph_settings
from llmsizer.instance import PredictSpec, make_instance
from llmsizer.perf.batch_shape import decode_batch
from llmsizer.sim import EngineConfig
from llmsizer.units import GB


def _spec(**engine: object) -> PredictSpec:
    return PredictSpec.model_validate(
        {"model": "llama-3.1-8b", "gpu": "h100-sxm", "isl": 100, "osl": 10, "concurrency": 4}
        | {"engine": engine}
    )


def test_each_preset_gets_its_engines_graphs() -> None:
    vllm = make_instance(_spec(engine="vllm")).step.cuda_graphs
    assert vllm is not None and vllm.max_capture_size == 512 and vllm.mixed == "piecewise"
    sglang = make_instance(_spec(engine="sglang")).step.cuda_graphs
    assert sglang is not None and sglang.max_capture_size == 256 and sglang.mixed == "eager"
    trt = make_instance(_spec(engine="trtllm")).step.cuda_graphs
    assert trt is not None and trt.max_capture_size == 128 and not trt.padding


def test_the_fields_override_the_preset() -> None:
    inst = make_instance(
        _spec(engine="trtllm", cudagraph_padding=True, max_cudagraph_capture_size=1024)
    )
    graphs = inst.step.cuda_graphs
    assert graphs is not None and graphs.padding and graphs.max_capture_size == 1024
    eager = make_instance(_spec(engine="vllm", cudagraph_mode="NONE"))
    graphed = make_instance(_spec(engine="vllm"))
    batch = decode_batch(8, 100)
    assert eager.step(batch) > graphed.step(batch)  # every layer launched eagerly
    sizes = make_instance(_spec(engine="vllm", cudagraph_capture_sizes=[64, 8, 1]))
    assert sizes.step.cuda_graphs is not None
    assert sizes.step.cuda_graphs.capture_sizes == (1, 8, 64)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"cudagraph_capture_sizes": [0, 8]}, "cudagraph_capture_sizes"),
        ({"max_cudagraph_capture_size": 0}, "max_cudagraph_capture_size"),
        ({"cudagraph_mode": "SOMETIMES"}, "cudagraph_mode"),
        (
            {"cudagraph_capture_sizes": [1, 8], "max_cudagraph_capture_size": 16},
            "must equal the largest",
        ),
    ],
)
def test_bad_settings_name_the_field(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        EngineConfig.model_validate({"engine": "vllm", **fields})


def test_inferencex_launches_set_their_graphs() -> None:
    def settings(engine: str, model: str, concurrency: int, **kw: object) -> dict[str, object]:
        args: dict[str, object] = {
            "precision": "fp8", "tp": 8, "inferencex": True, "gpu_memory_bytes": 180 * GB,
        } | kw  # fmt: skip
        return cuda_graph_settings(engine, model, concurrency=concurrency, **args)  # type: ignore[arg-type]

    assert settings("vllm", "minimax-m2.5", 64) == {"max_cudagraph_capture_size": 2048}
    assert settings("vllm", "llama-3.3-70b", 64, tp=4) == {"cudagraph_mode": "FULL_DECODE_ONLY"}
    assert settings("vllm", "llama-3.3-70b", 64, gpu_memory_bytes=80 * GB) == {}
    assert settings("sglang", "deepseek-r1", 64) == {"max_cudagraph_capture_size": 128}
    assert settings("sglang", "deepseek-r1", 512) == {"max_cudagraph_capture_size": 512}
    trt = settings("trtllm", "deepseek-r1", 256, attention_dp=8)
    assert trt == {"cudagraph_padding": True, "max_cudagraph_capture_size": 32}
    gap = settings("trtllm", "llama-3.1-8b", 48, inferencex=False)
    assert gap == {"max_cudagraph_capture_size": 48, "cudagraph_padding": True}
