"""Factories that keep simulator tests short: fixed lengths, fixed step costs, schedulers
driven step by step without the engine."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
import pytest

from llmsizer.sim import Engine, EngineConfig, FixedTicks, SimResult, StepCost
from llmsizer.sim.batching.base import Scheduler, SchedulerOutput
from llmsizer.sim.engine import _Run
from llmsizer.sim.engine import make_scheduler as scheduler_for
from llmsizer.sim.kv_cache import KVCacheManager
from llmsizer.sim.request import SimRequest, Status
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


def run_keeping_kv(engine: Engine, workload: Workload) -> tuple[SimResult, KVCacheManager]:
    """Run `workload` and keep the run's KV manager, whose final state no result reports."""
    run = _Run(engine, workload, None)
    return run.run(), run.kv


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


def make_request(
    request_id: int,
    isl: int,
    osl: int,
    *,
    arrival_s: float = 0.0,
    block_hashes: tuple[int, ...] = (),
) -> SimRequest:
    """A request of `isl` prompt and `osl` output tokens (ids must differ within a test: the
    decode set breaks finish-clock ties by id)."""
    return SimRequest(request_id, arrival_s, isl, osl, block_hashes)


def make_scheduler(*, blocks_per_hash: int = 1, **config: object) -> Scheduler:
    """The scheduler an engine with these `EngineConfig` settings would build (same presets,
    same mapping of settings), with its own KV manager (`.kv`), and no engine around it."""
    cfg = EngineConfig(**config)  # type: ignore[arg-type]
    kv = KVCacheManager(
        cfg.num_gpu_blocks,
        cfg.block_size,
        enable_prefix_caching=cfg.enable_prefix_caching,
        blocks_per_hash=blocks_per_hash,
    )
    return scheduler_for(cfg, kv)


def step(
    s: Scheduler, index: int, now: float = 0.0, next_arrival_s: float | None = None
) -> tuple[SchedulerOutput, list[SimRequest]]:
    """Decide step `index` and apply it at once; returns the decision and who finished."""
    out = s.schedule(now, next_arrival_s)
    assert out is not None, f"step {index}: nothing scheduled"
    return out, s.update(out, index)


def drive(
    s: Scheduler,
    requests: Iterable[SimRequest],
    *,
    tick_s: float = 0.01,
    check: Callable[[Scheduler, SchedulerOutput], None] | None = None,
    max_steps: int = 100_000,
) -> list[SchedulerOutput]:
    """The engine's loop without the engine: requests join at their `arrival_s`, every step
    takes `tick_s`, an idle scheduler jumps to the next arrival or its own wake-up time.
    `check(s, out)` sees the scheduler after each decision, before the step is applied.
    Returns every step's decision; fails if `max_steps` pass or requests are left behind."""
    pending = sorted(requests, key=lambda r: (r.arrival_s, r.request_id))
    outs: list[SchedulerOutput] = []
    now, i = 0.0, 0
    while len(outs) < max_steps:
        while i < len(pending) and pending[i].arrival_s <= now:
            s.add(pending[i])
            i += 1
        next_arrival_s = pending[i].arrival_s if i < len(pending) else None
        out = s.schedule(now, next_arrival_s)
        if out is None:
            times = [t for t in (next_arrival_s, s.wakeup_s(now)) if t is not None]
            if not times:
                break
            now = max(now, min(times))
            continue
        if check is not None:
            check(s, out)
        s.update(out, len(outs))
        outs.append(out)
        now += tick_s
    assert not s.has_unfinished(), f"{s.num_waiting} waiting, {s.num_running} running"
    assert all(r.status is Status.FINISHED for r in pending)
    return outs
