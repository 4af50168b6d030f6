"""Decode-only steps take a shortcut (`StepModel._decode_step`: everything but attention
kept per number of sequences) that must cost exactly what the general formula costs, to the
bit: committed plans and predictions hold full-precision results."""

import numpy as np
import pytest

from llmsizer.perf.batch_shape import BatchShape, ChunkShape, aggregate
from llmsizer.perf.step import StepModel, step_terms, step_time_s
from llmsizer.sim import Batch
from tests.perf.test_step_golden import DEPLOYMENTS, step_model


def general(step: StepModel, batch: BatchShape | Batch) -> tuple[float, float, float]:
    """(time, FLOPs, bytes) by the general formula, as `measure` sums them without the table."""
    c = step.constants
    terms = step_terms(c, aggregate(batch, c.window))
    work = step_terms(c, aggregate(batch, c.window), tiles=False)  # the real expert rows
    flops = memory = 0.0
    for i, (flops_per_s, bytes_per_s) in enumerate(step.part_rates):
        flops += work[2 * i] * flops_per_s
        memory += work[2 * i + 1] * bytes_per_s
    memory += work[10] * c.gemm_bytes_per_s
    return step_time_s(c, terms), flops, memory


@pytest.mark.parametrize("name", DEPLOYMENTS)
def test_decode_steps_cost_what_the_formula_says_to_the_bit(name: str) -> None:
    step = step_model(name)
    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(1, 600))
        context = int(n * rng.integers(1, 40_000))
        batch = Batch(num_decode_seqs=n, num_decode_context_tokens=context)
        expected = general(step, batch)
        assert step(batch) == expected[0]  # twice: the first call fills the table
        assert step(batch) == expected[0]
        assert step.decode_step_s(n, context) == expected[0]  # the simulator's shortcut
        assert step.measure(batch) == expected
        assert step.breakdown(batch).time_s == expected[0]


def test_steps_with_prompt_work_or_nothing_take_the_general_path() -> None:
    step = step_model("moe-window")
    for batch in (
        BatchShape(),
        BatchShape((ChunkShape(512, 100),)),
        BatchShape((ChunkShape(512, 100),), 31, 31 * 900),
    ):
        assert step(batch) == general(step, batch)[0]
        assert step.measure(batch) == general(step, batch)
    assert step(BatchShape()) == 0.0


@pytest.mark.parametrize("name", DEPLOYMENTS)
def test_a_run_of_decode_steps_costs_each_step_to_the_bit(name: str) -> None:
    """`decode_run_s` / `measure_decode_run` (the engine's quiet runs, `sim.engine`): step k
    reads `n` x k more keys, and each costs what `decode_step_s` / `measure_decode` say."""
    step = step_model(name)
    rng = np.random.default_rng(11)
    for _ in range(20):
        n = int(rng.integers(1, 600))
        context = int(n * rng.integers(1, 40_000))
        num = int(rng.integers(1, 300))
        times, flops, memory = step.measure_decode_run(n, context, num)
        assert np.array_equal(step.decode_run_s(n, context, num), times)
        for k in range(num):
            assert step.measure_decode(n, context + n * k) == (times[k], flops[k], memory[k])
            assert step.decode_step_s(n, context + n * k) == times[k]
