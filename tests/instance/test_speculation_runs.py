"""A speculating engine takes the simulator's shortcuts (issue 11): decode-only steps priced
without a batch and quiet runs of them priced at once (`SpeculativeStepCost.decode_step_s`,
`decode_run_s`), and its runs are the step-by-step runs to the bit; its records of steps
map to records of tokens for a whole table at once as they did record by record."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from llmsizer.instance import DeploymentSpec, make_instance
from llmsizer.instance.speculation import (
    SpeculativeSpec,
    in_steps,
    run_speculative,
    speculative_cost,
)
from llmsizer.metrics import summarize
from llmsizer.perf.batch_shape import BatchLike
from llmsizer.perf.speculative import SpeculativeStepCost
from llmsizer.records import RecordTable, RequestRecord
from llmsizer.sim import SimResult
from llmsizer.workload import WorkloadSpec, make_workload
from tests.perf.test_speculative_steps import pass_by_pass
from tests.test_chunk_table import assert_same_summary


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


# At 8 and 40 req/s an arrival, or a finish, comes every few steps: no quiet run of
# `MIN_QUIET_RUN` steps fits before one, and steps are priced one by one (`_Run._quiet_run`,
# issue 11); at 0.5 req/s most are priced in quiet runs.
@pytest.mark.parametrize(("rate", "k", "in_runs"), [(0.5, 3, 0.5), (8.0, 4, 0.0), (40.0, 2, 0.0)])
def test_a_speculating_run_is_the_step_by_step_run_to_the_bit(
    rate: float, k: int, in_runs: float
) -> None:
    instance = make_instance(DeploymentSpec(model="llama-3.1-8b", gpu="h100-sxm"))
    cost = speculative_cost(SpeculativeSpec(num_speculative_tokens=k), instance.step)
    counted = Counted(cost)
    fast, slow = _run(counted, rate, k), _run(OneByOne(cost), rate, k)
    assert counted.in_runs >= in_runs * fast.steps.num_steps  # quiet runs were taken
    assert fast.steps.num_steps == slow.steps.num_steps
    np.testing.assert_array_equal(fast.steps.end_s, slow.steps.end_s)
    np.testing.assert_array_equal(fast.steps.num_kv_blocks_used, slow.steps.num_kv_blocks_used)
    assert len(fast.records) == len(slow.records) == 200
    for a, b in zip(fast.records, slow.records, strict=True):
        np.testing.assert_array_equal(a.token_times_s, b.token_times_s)
        for f in dataclasses.fields(a):
            if f.name != "token_times_s":
                assert getattr(a, f.name) == getattr(b, f.name), f.name


def per_record(record: RequestRecord, num_output: int) -> RequestRecord:
    """The mapping of one record of steps to tokens as it was written first, record by
    record: the reference for the whole-table one."""
    times = record.token_times_s
    num_steps = times.shape[0] - 1
    if num_steps <= 0 or num_output <= 1:
        return dataclasses.replace(record, num_output_tokens_requested=num_output)
    done = np.round(np.arange(num_steps + 1) * ((num_output - 1) / num_steps)).astype(np.int64)
    expanded = np.concatenate((times[:1], np.repeat(times[1:], np.diff(done))))
    return dataclasses.replace(
        record, token_times_s=expanded, num_output_tokens_requested=num_output
    )


@pytest.mark.parametrize(("delay_s", "k", "osl"), [(0.0, 3, 300), (0.05, 4, 300), (0.0, 2, 1)])
def test_records_map_to_tokens_as_record_by_record(delay_s: float, k: int, osl: int) -> None:
    """A whole table at once (`InSteps.in_tokens`), a slice of it (an early stop's judged
    rows), and an empty one, against the per-record mapping; with a first-token hold too."""
    instance = make_instance(DeploymentSpec(model="llama-3.1-8b", gpu="h100-sxm"))
    spec = SpeculativeSpec(num_speculative_tokens=k, acceptance_std=0.2)
    engine = dataclasses.replace(instance.simulator(), first_token_delay_s=delay_s)
    engine = dataclasses.replace(engine, step_cost=speculative_cost(spec, instance.step))
    workload = make_workload(
        WorkloadSpec.model_validate(
            {"request_rate": 20.0, "num_requests": 150, "isl": 300, "osl": osl, "seed": 1}
        )
    )
    run = in_steps(engine, workload, spec, 0.9, np.random.default_rng(0))
    table = run.engine.run(run.workload).records
    assert isinstance(table, RecordTable)
    for part in (table, table[40:], table[150:]):
        mapped = run.in_tokens(part)
        assert len(mapped) == len(part)
        assert_same_summary(summarize(mapped), summarize(list(mapped)))  # O(steps)
        for got, r in zip(mapped, part, strict=True):
            want = per_record(r, int(workload.num_output_tokens[r.request_id]))
            np.testing.assert_array_equal(got.token_times_s, want.token_times_s)
            assert got.num_output_tokens == osl
            assert not got.token_times_s.flags.writeable
            for f in dataclasses.fields(got):
                if f.name != "token_times_s":
                    assert getattr(got, f.name) == getattr(want, f.name), f.name
