"""The course's sizing cases (the issue's bars) and the committed example outputs.

The bars use the examples' own use cases, with the latency curves and the uncertainty band
switched off (they do not change the answer, only what is reported about it).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from llmsizer.report.plan_text import plan_text
from llmsizer.sizing.inputs import usecase_from_mapping
from llmsizer.sizing.plan import plan
from llmsizer.sizing.usecase import UseCase

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sizing"


def answer_only(name: str) -> UseCase:
    path = EXAMPLES / f"{name}.yaml"
    u = usecase_from_mapping(yaml.safe_load(path.read_text()), base_dir=path.parent)
    quick = u.search.model_copy(update={"curves": False, "uncertainty": 0.0})
    return u.model_copy(update={"search": quick})


def test_the_course_nemo_43b_case_needs_10_to_15_dgx_h100() -> None:
    result = plan(answer_only("nemo43b_dgx_h100"))
    w = result.winner
    assert w is not None and w.sizing is not None and w.best is not None
    assert "DGX H100" in w.server.name
    # the course: 13; 10 since TensorRT-LLM's KV cache is its free_gpu_memory_fraction of
    # the memory left free after the weights (issue 10, `perf.memory.MemoryRule`), 11 before
    assert 10 <= w.sizing.num_servers <= 15
    assert w.best.config.preset == "trtllm" and w.best.config.precision == "bf16"
    assert w.best.at_rate is not None
    assert w.best.at_rate.summary["p95_ttft_ms"] <= 3000


def test_the_course_llama_3_8b_case_serves_50_to_95_requests_per_dgx_h100() -> None:
    result = plan(answer_only("llama3_8b_h100"))
    w = result.winner
    assert w is not None and w.best is not None and w.best.rate is not None
    per_dgx = w.best.rate * w.server.instances_per_server(w.best.config.gpus_per_instance)
    # the course: 70.7 (its TensorRT-LLM of 2024); 83 on the general fit of the C++ runtime's
    # tables, 91.9 since the PyTorch backend, which the AIC rows ran, has a fit of its own
    # (session 11, `bench/validate_perf.py --fit-runtime pytorch`)
    assert 50 <= per_dgx <= 95
    assert w.best.at_rate is not None
    assert w.best.at_rate.summary["p95_ttft_ms"] < 500


def _regenerate_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("regenerate", EXAMPLES / "regenerate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize("name", ["nemo43b_dgx_h100", "llama3_8b_h100", "azure_chat_llama31_70b"])
def test_committed_example_outputs_are_current(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    regenerate = _regenerate_module()
    monkeypatch.chdir(EXAMPLES)
    data = regenerate.run(name)
    assert regenerate.as_json(data) == (EXAMPLES / f"{name}.json").read_text()
    assert plan_text(data) == (EXAMPLES / f"{name}.txt").read_text()
