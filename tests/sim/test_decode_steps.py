"""Decode-only steps run in a row (the engine's `_decode_steps`, `Scheduler.decodes_only`)
are the general path's steps: the engine's step log equals the one `schedule` and `update`
give step by step without the engine (`conftest.drive`), under every policy, with
and preemption. (The GPU model's decode-only price: tests/perf/test_decode_steps.py.)"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from llmsizer.perf import Deployment, StepModel
from llmsizer.sim import Batch, Engine, EngineConfig, LinearStepCost
from llmsizer.sim.arrivals import Arrivals
from llmsizer.sim.batch import decode_step_cost, make_batch
from llmsizer.sim.batching.base import Scheduler, SchedulerOutput
from tests.sim.conftest import drive, make_engine, make_request, make_scheduler, make_workload

CONFIGS = [
    {"engine": "vllm"},
    {"engine": "sglang"},
    {"engine": "trtllm"},
    {"engine": "vllm", "max_num_seqs": 8},  # a full batch with requests waiting
    {"engine": "vllm", "num_gpu_blocks": 120},  # preemption
    {"engine": "sglang", "num_gpu_blocks": 120},
    {"engine": "vllm", "scheduler_recv_interval": 3},
    {"engine": "sglang", "scheduler_recv_interval": 5},  # the skipper counts skipped steps
    # attention-DP balancing counts every step, skipped ones too (its free-running timeout)
    {
        "engine": "trtllm",
        "num_attention_dp_ranks": 4,
        "attention_dp_enable_balance": True,
        "attention_dp_timeout_iters": 7,
        "attention_dp_batching_wait_iters": 2,
    },
    # delay batching counts held steps in `schedule`, a full batch's too
    {"engine": "vllm", "batch_wait_timeout_iters": 4, "batch_wait_max_tokens_ratio": 0.5},
    {
        "engine": "vllm",
        "max_num_seqs": 8,
        "batch_wait_timeout_iters": 4,
        "batch_wait_max_tokens_ratio": 0.5,
    },
    # whole prompts that do not fit beside the decodes: the first waiting one is refused
    # until a request finishes (`ContinuousScheduler._refuse`)
    {"engine": "trtllm", "max_num_seqs": 64, "max_num_batched_tokens": 300},
    {"engine": "trtllm", "num_gpu_blocks": 60},  # refused for KV blocks (reserved in full)
    {
        "engine": "vllm",
        "enable_chunked_prefill": False,
        "max_num_seqs": 64,
        "max_num_batched_tokens": 300,
    },
]


def _load(rng: np.random.Generator, n: int = 300) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    isl = rng.integers(8, 300, n)
    osl = rng.integers(1, 120, n)
    arrival_s = np.cumsum(rng.exponential(0.03, n))
    return isl, osl, arrival_s


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(map(str, c.values())))
def test_the_engine_logs_the_steps_the_general_path_takes(
    config: dict[str, object], rng: np.random.Generator
) -> None:
    isl, osl, arrival_s = _load(rng)
    result = make_engine(**config).run(make_workload(isl, osl, arrival_s=arrival_s))
    seen: list[tuple[int, int, int, int, int]] = []

    def record(s: Scheduler, out: SchedulerOutput) -> None:
        row = (out.num_prefill_tokens, out.batch.num_decode_seqs, s.num_running, s.num_waiting)
        seen.append((*row, s.kv.num_used))

    requests = [
        make_request(i, int(isl[i]), int(osl[i]), arrival_s=float(arrival_s[i]))
        for i in range(len(isl))
    ]
    drive(make_scheduler(**config), requests, tick_s=0.010, check=record)
    steps = result.steps
    logged = np.column_stack(
        [
            steps.num_prefill_tokens,
            steps.num_decode_seqs,
            steps.num_running,
            steps.num_waiting,
            steps.num_kv_blocks_used,
        ]
    ).astype(int)
    assert [tuple(row) for row in logged.tolist()] == seen
    if "num_gpu_blocks" in config and config["engine"] != "trtllm":  # (it reserves in full)
        assert result.num_preemptions > 0  # the case exercises preemption


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(map(str, c.values())))
def test_a_decode_only_step_is_what_schedule_decides(
    config: dict[str, object], rng: np.random.Generator
) -> None:
    """When `decodes_only` says so before a step, `schedule` decides decodes only (unless it
    had to preempt, which `book_decode_step` leaves to it), and it says so often unless
    requests wait for something else than a slot."""
    isl, osl, arrival_s = _load(rng)
    s = make_scheduler(**config)
    pending = [
        make_request(i, int(isl[i]), int(osl[i]), arrival_s=float(arrival_s[i]))
        for i in range(len(isl))
    ]
    now, index, num_quiet = 0.0, 0, 0
    while pending or s.has_unfinished():
        while pending and pending[0].arrival_s <= now:
            s.add(pending.pop(0))
        quiet, preemptions = s.decodes_only(), s.num_preemptions
        out = s.schedule(now, pending[0].arrival_s if pending else None)
        if out is None:
            now = pending[0].arrival_s
            continue
        if quiet and s.num_preemptions == preemptions:
            assert not out.prefills and out.decoded and out.batch.num_decode_seqs == s.num_running
            num_quiet += 1
        s.update(out, index)
        index, now = index + 1, now + 0.010
    # (requests wait for KV blocks, or delay batching counts the steps it holds them)
    rarely = {"num_gpu_blocks", "batch_wait_timeout_iters"} & set(config)
    assert num_quiet > (0 if rarely else index // 4)


def test_a_cost_without_a_decode_price_is_asked_for_the_batch() -> None:
    cost = LinearStepCost(0.005, 1e-5, 2e-5, 3e-9)
    assert decode_step_cost(cost)(7, 900) == cost(make_batch((), 7, 900))


def test_an_engine_on_the_gpu_model_pickles_and_runs_the_same(rng: np.random.Generator) -> None:
    """Sweeps send engines to other processes: compiled (`setup.py`), a frozen dataclass
    cannot be unpickled field by field, so `Engine` and `StepModel` pickle by their fields."""
    engine = Engine(
        EngineConfig(engine="vllm"),
        StepModel(Deployment.from_names("llama-3.1-8b", "h100-sxm", "fp8")),
        first_token_delay_s=0.002,
    )
    copy = pickle.loads(pickle.dumps(engine))
    isl, osl, arrival_s = _load(rng, 100)
    workload = make_workload(isl, osl, arrival_s=arrival_s)
    a, b = engine.run(workload).records, copy.run(workload).records
    assert copy.first_token_delay_s == engine.first_token_delay_s
    assert np.array_equal(a.token_buffer, b.token_buffer) and np.array_equal(a.finish_s, b.finish_s)


class _StepByStep:
    """The GPU model without its price of many decode steps at once: the engine then runs
    every step one by one."""

    def __init__(self, step: StepModel) -> None:
        self.step = step
        self.decode_step_s = step.decode_step_s

    def __call__(self, batch: Batch) -> float:
        return self.step(batch)


class _Counted:
    """The GPU model, counting the decode steps it priced at once (a wrapper: a compiled
    `StepModel` cannot be subclassed)."""

    num_run_steps = 0

    def __init__(self, step: StepModel) -> None:
        self.step = step
        self.decode_step_s = step.decode_step_s

    def __call__(self, batch: Batch) -> float:
        return self.step(batch)

    def decode_run_s(self, num_decode_seqs: int, context: int, num_steps: int) -> np.ndarray:
        _Counted.num_run_steps += num_steps
        return self.step.decode_run_s(num_decode_seqs, context, num_steps)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(map(str, c.values())))
@pytest.mark.parametrize("mean_gap_s", [0.002, 0.05])
def test_quiet_decode_runs_log_what_steps_one_by_one_log(
    config: dict[str, object], mean_gap_s: float, rng: np.random.Generator
) -> None:
    """Decode steps in which nothing but the clock changes are priced and logged at once
    (`_Run._quiet_run`) when the cost can price them so (`StepModel.decode_run_s`): the step
    log, the token times and the KV blocks are the same to the bit as step by step, with
    arrivals in between, preemption, and a run driven in slices (`advance(until_s)`)."""
    isl, osl = rng.integers(8, 300, 300), rng.integers(1, 400, 300)
    arrival_s = np.cumsum(rng.exponential(mean_gap_s, 300))
    step = _Counted(StepModel(Deployment.from_names("llama-3.1-8b", "h100-sxm", "fp8")))
    cfg = EngineConfig(**config)  # type: ignore[arg-type]
    workload = make_workload(isl, osl, arrival_s=arrival_s)
    _Counted.num_run_steps = 0
    runs = Engine(cfg, step).run(workload)
    if mean_gap_s > 0.01:  # (a heavy load finishes a request every few steps)
        assert _Counted.num_run_steps > 0  # the case exercises quiet runs
    one_by_one = Engine(cfg, _StepByStep(step.step)).run(workload)
    sliced = Engine(cfg, step).start(workload, Arrivals(workload, cfg.block_size, True))
    for until_s in np.arange(0.1, float(arrival_s[-1]) + 60.0, 0.37):
        sliced.advance(float(until_s))
    sliced.advance(None)
    for result in (runs, sliced.result()):
        assert np.array_equal(result.steps.end_s, one_by_one.steps.end_s)
        assert np.array_equal(result.steps.num_kv_blocks_used, one_by_one.steps.num_kv_blocks_used)
        assert np.array_equal(result.steps.num_decode_seqs, one_by_one.steps.num_decode_seqs)
        assert np.array_equal(result.records.token_buffer, one_by_one.records.token_buffer)
        assert result.num_preemptions == one_by_one.num_preemptions
        assert result.peak_kv_blocks_used == one_by_one.peak_kv_blocks_used


class _Falling:
    """A decode step that costs less as its context grows (`_Run._quiet_ends` may not
    assume otherwise), with its price of many steps at once: each step's own."""

    def __call__(self, batch: Batch) -> float:
        if batch.prefill_chunks:
            return 0.004 + 1e-6 * sum(c.num_new_tokens for c in batch.prefill_chunks)
        return self.decode_step_s(batch.num_decode_seqs, batch.num_decode_context_tokens)

    def decode_step_s(self, num_decode_seqs: int, context: int) -> float:
        return 0.002 + 0.01 / (1.0 + context / 4096) + 1e-5 * num_decode_seqs

    def decode_run_s(self, num_decode_seqs: int, context: int, num_steps: int) -> np.ndarray:
        contexts = context + num_decode_seqs * np.arange(num_steps)
        return np.array([self.decode_step_s(num_decode_seqs, int(c)) for c in contexts])


@pytest.mark.parametrize("mean_gap_s", [0.02, 0.3])
def test_quiet_runs_cut_by_an_arrival_log_what_steps_one_by_one_log(
    mean_gap_s: float, rng: np.random.Generator
) -> None:
    """A quiet run is priced only as far as the next arrival (or slice end) can come, from
    its first step's cost (issue 11), and on when a cost fell with its context: the log
    and token times are the step by step run's to the bit, in whole runs and in slices."""
    isl, osl = rng.integers(8, 300, 200), rng.integers(50, 600, 200)
    arrival_s = np.cumsum(rng.exponential(mean_gap_s, 200))
    workload = make_workload(isl, osl, arrival_s=arrival_s)
    cfg = EngineConfig(max_num_seqs=64)
    cost = _Falling()
    one_by_one = Engine(cfg, _StepByStep(cost)).run(workload)  # type: ignore[arg-type]
    sliced = Engine(cfg, cost).start(workload, Arrivals(workload, cfg.block_size, True))
    for until_s in np.arange(0.5, float(arrival_s[-1]) + 60.0, 1.3):
        sliced.advance(float(until_s))
    sliced.advance(None)
    for result in (Engine(cfg, cost).run(workload), sliced.result()):
        assert np.array_equal(result.steps.end_s, one_by_one.steps.end_s)
        assert np.array_equal(result.records.token_buffer, one_by_one.records.token_buffer)
