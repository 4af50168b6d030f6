"""TensorRT-LLM's piecewise CUDA graphs for prompt steps where InferenceX's DeepSeek scripts
turned them on (`llmsizer.calibrate.aic_launch.trtllm_piecewise`), and what it changes: a
compiled model's eager prompt step launches only its attention (`perf.launches`)."""

from __future__ import annotations

import pytest

from llmsizer.calibrate.aic_launch import launch_settings, trtllm_piecewise
from llmsizer.instance import PredictSpec, make_instance
from llmsizer.perf.batch_shape import BatchShape, ChunkShape, aggregate
from llmsizer.perf.step import StepTerms, step_terms
from llmsizer.units import GB

PIECEWISE = {"cudagraph_mode": "FULL_AND_PIECEWISE"}
PLAIN, MTP = "1.2.0rc6.post2", "1.2.0rc6.post3"


@pytest.mark.parametrize(
    ("precision", "isl", "osl", "conc", "ep", "dp", "version", "on"),
    [
        # FP8 plain (@ ec7bafaae): 1k/1k and 8k/1k from CONC 64, 1k/8k at 128 only
        ("fp8", 1024, 1024, 32, 1, 1, PLAIN, False),
        ("fp8", 1024, 1024, 64, 1, 1, PLAIN, True),
        ("fp8", 8192, 1024, 64, 1, 1, PLAIN, True),
        ("fp8", 1024, 8192, 128, 1, 1, PLAIN, True),
        ("fp8", 1024, 8192, 256, 8, 8, PLAIN, False),
        # NVFP4 plain (@ 6eecc0e66): 1k/1k at TP8 EP8
        ("fp4", 1024, 1024, 64, 8, 1, PLAIN, True),
        ("fp4", 1024, 1024, 64, 4, 1, PLAIN, False),
        ("fp4", 8192, 1024, 64, 8, 1, PLAIN, False),
        # FP8 MTP (@ 5d517074c): on but for narrow CONC and attention DP
        ("fp8", 1024, 1024, 4, 1, 1, MTP, False),
        ("fp8", 1024, 1024, 8, 1, 1, MTP, True),
        ("fp8", 8192, 1024, 16, 1, 1, MTP, False),
        ("fp8", 8192, 1024, 32, 1, 1, MTP, True),
        ("fp8", 1024, 1024, 64, 8, 8, MTP, False),
        # NVFP4 MTP (@ 0aae52d4c): 1k/1k at 32, 64, and 128 without DP; 1k/8k at 64
        ("fp4", 1024, 1024, 32, 1, 1, MTP, True),
        ("fp4", 1024, 1024, 128, 8, 8, MTP, False),
        ("fp4", 1024, 8192, 64, 1, 1, MTP, True),
        ("fp4", 1024, 8192, 128, 1, 1, MTP, False),
        # older images' scripts set none
        ("fp8", 1024, 1024, 64, 1, 1, "1.1.0rc2.post2", False),
    ],
)
def test_the_scripts_turn_piecewise_graphs_on_where_they_say(
    precision: str, isl: int, osl: int, conc: int, ep: int, dp: int, version: str, on: bool
) -> None:
    assert trtllm_piecewise(precision, isl, osl, conc, ep, dp, version) == (PIECEWISE if on else {})


def test_only_deepseek_rows_on_tensorrt_llm_get_it() -> None:
    common = {"precision": "fp8", "tp": 8, "gpu_memory_bytes": 180 * GB, "concurrency": 64}
    rows = {"isl": 1024, "osl": 1024, "inferencex": True, "version": PLAIN}
    deepseek = launch_settings(engine="trtllm", model="deepseek-r1", **common, **rows)
    assert deepseek["cudagraph_mode"] == "FULL_AND_PIECEWISE"
    llama = launch_settings(engine="trtllm", model="llama-3.1-70b", **common, **rows)
    sglang = launch_settings(engine="sglang", model="deepseek-r1", **common, **rows)
    assert "cudagraph_mode" not in llama and "cudagraph_mode" not in sglang


def test_a_piecewise_launch_pays_a_layer_where_an_eager_one_pays_its_launches() -> None:
    base = {"model": "deepseek-r1", "gpu": "b200", "precision": "fp8", "tp": 8,
            "isl": 1024, "osl": 1024, "concurrency": 64}  # fmt: skip
    prompt = BatchShape(prefill_chunks=(ChunkShape(1024),))
    eager_s = {}
    for mode in ("FULL_DECODE_ONLY", "FULL_AND_PIECEWISE"):
        engine = {"engine": "trtllm", "cudagraph_mode": mode}
        spec = PredictSpec.model_validate(base | {"engine": engine})
        step = make_instance(spec, max_model_len=4096).step
        c = step.constants
        terms = StepTerms._make(step_terms(c, aggregate(prompt, c.window), step.cuda_graphs))
        eager_s[mode] = terms.prefill_layers_overhead_s
    assert eager_s["FULL_AND_PIECEWISE"] == pytest.approx(eager_s["FULL_DECODE_ONLY"] * 61 / 135)
