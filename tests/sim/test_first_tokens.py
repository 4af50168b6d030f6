"""A run's progress read cheaply (`_Run.first_tokens`, `StepLogBuilder.end_s`): at any point
of a run, the finished requests' ids, arrival and first token times are the record table's,
to the bit: with quiet decode runs in the compact log, preempted requests (their first run's
first token) and a first-token hold."""

from __future__ import annotations

import numpy as np
import pytest

from llmsizer.perf import Deployment, StepModel
from llmsizer.sim import Engine, EngineConfig
from llmsizer.sim.arrivals import Arrivals
from tests.sim.conftest import make_workload


@pytest.mark.parametrize(("num_gpu_blocks", "delay_s"), [(None, 0.0), (60, 0.002)])
def test_first_tokens_read_at_any_point_are_the_records(
    num_gpu_blocks: int | None, delay_s: float, rng: np.random.Generator
) -> None:
    n = 300
    isl, osl = rng.integers(8, 300, n), rng.integers(1, 200, n)
    arrival_s = np.cumsum(rng.exponential(0.02, n))
    workload = make_workload(isl, osl, arrival_s=arrival_s)
    cfg = EngineConfig(engine="vllm", num_gpu_blocks=num_gpu_blocks, block_size=16)
    step = StepModel(Deployment.from_names("llama-3.1-8b", "h100-sxm", "fp8"))
    engine = Engine(cfg, step, first_token_delay_s=delay_s)
    run = engine.start(workload, Arrivals(workload, cfg.block_size, cfg.enable_prefix_caching))
    checked = 0
    for until_s in [*np.linspace(0.5, float(arrival_s[-1]), 8).tolist(), None]:
        run.advance(until_s)  # None: to the end
        ids, arrived_s, first_s = run.first_tokens()
        result = run.result()
        records = result.records
        np.testing.assert_array_equal(run.log.end_s(), result.steps.end_s)
        order = np.argsort(ids)
        np.testing.assert_array_equal(ids[order], records.request_id)  # type: ignore[attr-defined]
        np.testing.assert_array_equal(arrived_s[order], records.arrival_s)  # type: ignore[attr-defined]
        np.testing.assert_array_equal(first_s[order], records.first_token_s())  # type: ignore[attr-defined]
        checked += len(ids)
    assert checked > n and len(ids) == n  # partial reads, then the whole run
    if num_gpu_blocks is not None:
        assert result.num_preemptions > 0 and run.finished.restarted  # first runs read
