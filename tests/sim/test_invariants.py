"""Properties every run must have, whatever the policy and load."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmsizer.sim import LinearStepCost
from llmsizer.sim.engine import _Run
from llmsizer.sim.request import SimRequest

from .conftest import make_engine, make_workload, run_keeping_kv

POLICIES = [
    {"engine": "vllm"},
    {"engine": "sglang"},
    {"engine": "trtllm"},
    {"batching": "static"},
    {"batching": "dynamic", "batch_timeout_ms": 20},
    {"enable_chunked_prefill": False, "max_num_batched_tokens": 4096},
]


@settings(max_examples=30, deadline=None)
@given(
    policy=st.sampled_from(POLICIES),
    seed=st.integers(0, 2**31),
    n=st.integers(1, 60),
    max_num_seqs=st.integers(1, 16),
    num_blocks=st.one_of(st.none(), st.integers(300, 1500)),
    closed=st.booleans(),
)
def test_every_request_completes_once_and_time_runs_forward(
    policy: dict[str, object],
    seed: int,
    n: int,
    max_num_seqs: int,
    num_blocks: int | None,
    closed: bool,
) -> None:
    rng = np.random.default_rng(seed)
    isl = rng.integers(1, 2000, n)
    osl = rng.integers(1, 300, n)
    arrivals = np.cumsum(rng.exponential(0.05, n))
    w = make_workload(
        isl, osl, arrival_s=None if closed else arrivals, concurrency=3 if closed else None
    )
    cost = LinearStepCost(a_s=0.005, b_s_per_prefill_token=1e-5, d_s_per_context_token=1e-8)
    cfg = {"max_num_seqs": max_num_seqs, "num_gpu_blocks": num_blocks, **policy}
    res, kv = run_keeping_kv(make_engine(cost, **cfg), w)

    assert [r.request_id for r in res.records] == list(range(n))
    for r, o in zip(res.records, osl, strict=True):
        assert r.num_output_tokens == o
        assert r.ok
        assert r.scheduled_s is not None and r.arrival_s <= r.scheduled_s
        assert r.ttft_s is not None and r.e2el_s is not None
        assert 0 < r.ttft_s <= r.e2el_s
        assert np.all(np.diff(r.token_times_s) > 0)
    assert np.all(res.steps.end_s > res.steps.start_s)
    assert np.all(res.steps.start_s[1:] >= res.steps.end_s[:-1])
    if num_blocks is not None:
        assert res.peak_kv_blocks_used <= num_blocks
    # every block is back: free, or a cached prefix nobody references (evictable)
    assert kv.num_used == kv.num_evictable
    assert res.steps.num_running.max() <= max_num_seqs
    if closed:
        in_system = res.steps.num_running - res.steps.num_padding_seqs + res.steps.num_waiting
        assert in_system.max() <= 3


@pytest.mark.parametrize("policy", POLICIES)
def test_same_inputs_give_the_same_records(policy: dict[str, object]) -> None:
    rng = np.random.default_rng(7)
    w = make_workload(
        rng.integers(1, 3000, 50),
        rng.integers(1, 200, 50),
        arrival_s=np.cumsum(rng.exponential(0.02, 50)),
    )
    a = make_engine(**policy).run(w).records
    b = make_engine(**policy).run(w).records
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x.token_times_s, y.token_times_s)
        assert x.arrival_s == y.arrival_s and x.scheduled_s == y.scheduled_s


@pytest.mark.parametrize("collecting", [True, False])
def test_a_run_pauses_the_garbage_collector_and_restores_it(collecting: bool) -> None:
    """Paused while the engine steps (issue 13), as the caller had it after, even when the
    step cost raises."""
    seen: list[bool] = []

    def cost(batch: object) -> float:
        seen.append(gc.isenabled())
        if len(seen) == 3:
            raise RuntimeError("step cost failed")
        return 0.01

    w = make_workload(10, 5, n=2)
    was = gc.isenabled()
    try:
        gc.enable() if collecting else gc.disable()
        assert make_engine(**{"engine": "vllm"}).run(w).records  # a normal run
        assert gc.isenabled() is collecting
        with pytest.raises(RuntimeError, match="step cost failed"):
            make_engine(cost, engine="vllm").run(w)
        assert gc.isenabled() is collecting
    finally:
        gc.enable() if was else gc.disable()
    assert seen == [False, False, False]


def test_a_run_keeps_only_the_requests_in_flight() -> None:
    """Memory (issue 13): a finished request leaves the engine as a row of numbers, so after
    a run no `SimRequest` of it is alive, while its records are all there."""
    arrivals = 4321.0 + 0.01 * np.arange(200)
    run = _Run(make_engine(engine="vllm"), make_workload(50, 20, arrival_s=arrivals), None)
    result = run.run()
    gc.collect()
    # `type(o) is` rather than isinstance: some objects warn when asked for their __class__
    alive = [o for o in gc.get_objects() if type(o) is SimRequest and o.arrival_s >= 4321.0]
    assert alive == []
    assert len(run.finished) == len(result.records) == 200
    assert [r.num_output_tokens for r in result.records] == [20] * 200
