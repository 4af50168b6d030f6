"""A speculating engine takes the simulator's shortcuts (issue 11): decode-only steps priced
without a batch and quiet runs of them priced at once (`SpeculativeStepCost.decode_step_s`,
`decode_run_s`), and its runs are the step-by-step runs to the bit."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from llmsizer.instance import DeploymentSpec, make_instance
from llmsizer.instance.speculation import SpeculativeSpec, run_speculative, speculative_cost
from llmsizer.perf.batch_shape import BatchLike
from llmsizer.perf.speculative import SpeculativeStepCost
from llmsizer.sim import SimResult
from llmsizer.workload import WorkloadSpec, make_workload
from tests.perf.test_speculative_steps import pass_by_pass


@dataclass(frozen=True)
class OneByOne:
    """The speculating step cost with no shortcut: every step a `Batch`, priced by the
    drafter's passes one by one and the verification's aggregates."""

    cost: SpeculativeStepCost

    def __call__(self, batch: BatchLike) -> float:
        return pass_by_pass(self.cost, batch)


@dataclass
class Counted:
    """The speculating step cost, counting the steps its quiet runs priced."""

    cost: SpeculativeStepCost
    in_runs: int = 0

    def __call__(self, batch: BatchLike) -> float:
        return self.cost(batch)

    def decode_step_s(self, n: int, context: int) -> float:
        return self.cost.decode_step_s(n, context)

    def decode_run_s(self, n: int, context: int, num_steps: int) -> Any:
        self.in_runs += num_steps
        return self.cost.decode_run_s(n, context, num_steps)


def _run(step_cost: Any, rate: float, k: int) -> SimResult:
    instance = make_instance(DeploymentSpec(model="llama-3.1-8b", gpu="h100-sxm"))
    spec = SpeculativeSpec(num_speculative_tokens=k)
    workload = make_workload(
        WorkloadSpec.model_validate(
            {"request_rate": rate, "num_requests": 200, "isl": 500, "osl": 300, "seed": 2}
        )
    )
    engine = instance.simulator(step_cost=step_cost)
    return run_speculative(engine, workload, spec, 0.9, np.random.default_rng(4))


@pytest.mark.parametrize(("rate", "k"), [(0.5, 3), (8.0, 4), (40.0, 2)])
def test_a_speculating_run_is_the_step_by_step_run_to_the_bit(rate: float, k: int) -> None:
    instance = make_instance(DeploymentSpec(model="llama-3.1-8b", gpu="h100-sxm"))
    cost = speculative_cost(SpeculativeSpec(num_speculative_tokens=k), instance.step)
    counted = Counted(cost)
    fast, slow = _run(counted, rate, k), _run(OneByOne(cost), rate, k)
    assert counted.in_runs > 0.2 * fast.steps.num_steps  # quiet runs were taken
    assert fast.steps.num_steps == slow.steps.num_steps
    np.testing.assert_array_equal(fast.steps.end_s, slow.steps.end_s)
    np.testing.assert_array_equal(fast.steps.num_kv_blocks_used, slow.steps.num_kv_blocks_used)
    assert len(fast.records) == len(slow.records) == 200
    for a, b in zip(fast.records, slow.records, strict=True):
        np.testing.assert_array_equal(a.token_times_s, b.token_times_s)
        for f in dataclasses.fields(a):
            if f.name != "token_times_s":
                assert getattr(a, f.name) == getattr(b, f.name), f.name
