"""Factories that keep simulator tests short: fixed lengths, fixed step costs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from llmsizer.sim import Engine, EngineConfig, FixedTicks, StepCost
from llmsizer.workload import Workload


def make_workload(
    isl: int | Sequence[int],
    osl: int | Sequence[int],
    *,
    n: int | None = None,
    arrival_s: Sequence[float] | np.ndarray | None = None,
    concurrency: int | None = None,
    system_prompt_tokens: int = 0,
    prefix_hashes: tuple[tuple[int, ...], ...] | None = None,
    prefix_block_tokens: int = 512,
) -> Workload:
    if n is None:
        sized = [
            x
            for x in (isl, osl, arrival_s, prefix_hashes)
            if x is not None and not isinstance(x, int)
        ]
        n = len(sized[0])  # type: ignore[arg-type]
    isl_a = np.full(n, isl, dtype=np.int64) if isinstance(isl, int) else np.asarray(isl)
    osl_a = np.full(n, osl, dtype=np.int64) if isinstance(osl, int) else np.asarray(osl)
    arr = None
    if concurrency is None:
        arr = np.zeros(n) if arrival_s is None else np.asarray(arrival_s, dtype=np.float64)
    return Workload(
        num_prompt_tokens=isl_a.astype(np.int64),
        num_output_tokens=osl_a.astype(np.int64),
        arrival_s=arr,
        concurrency=concurrency,
        system_prompt_tokens=system_prompt_tokens,
        prefix_hashes=prefix_hashes,
        prefix_block_tokens=prefix_block_tokens,
    )


def make_engine(step_cost: StepCost | None = None, **config: object) -> Engine:
    return Engine(EngineConfig(**config), step_cost or FixedTicks(0.010))  # type: ignore[arg-type]


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)
