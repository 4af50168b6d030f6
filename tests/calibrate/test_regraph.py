"""`bench/regraph_cache.py`: a schedule recorded before CUDA graphs were priced, converted,
has the features a fresh recording has (a closed loop's schedule does not change)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import numpy as np
import pytest

from llmsizer.calibrate import record
from llmsizer.calibrate.features import StepFeaturizer
from llmsizer.instance import PredictSpec, make_instance


@pytest.mark.parametrize(("engine", "concurrency"), [("vllm", 21), ("trtllm", 45)])
def test_a_converted_trace_equals_a_fresh_recording(
    engine: str,
    concurrency: int,
    monkeypatch: pytest.MonkeyPatch,
    bench_script: Callable[[str], ModuleType],
) -> None:
    regraph = bench_script("regraph_cache").regraph
    spec = PredictSpec.model_validate(
        {
            "model": "llama-3.1-8b", "gpu": "h100-sxm", "engine": engine, "isl": 300,
            "osl": 40, "concurrency": concurrency, "num_requests": 3 * concurrency,
            "length_ratio": 0.8, "cudagraph_padding": True,
        }
    )  # fmt: skip
    fresh = record.record_trace(spec)
    with monkeypatch.context() as m:  # recorded as before: features without the graphs
        m.setattr(record, "StepFeaturizer", lambda d, graphs=None, **_: StepFeaturizer(d))
        old = record.record_trace(spec)
    inst = make_instance(spec, max_model_len=spec.isl + spec.osl)
    converted = regraph(old, StepFeaturizer(inst.deployment, inst.step.cuda_graphs))
    assert not np.allclose(old.features, fresh.features)  # the graphs changed something
    np.testing.assert_allclose(converted.features, fresh.features, rtol=1e-9, atol=1e-15)
