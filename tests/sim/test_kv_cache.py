"""Paged KV: capacity is never exceeded, preemption recomputes, prefixes are reused."""

from __future__ import annotations

import numpy as np
import pytest

from llmsizer.metrics import summarize
from llmsizer.sim import LinearStepCost
from llmsizer.sim.kv_cache import KVCacheManager

from .conftest import make_engine, make_workload, run_keeping_kv


def test_preemption_when_kv_is_full_and_every_request_still_completes() -> None:
    w = make_workload(200, 300, n=20)
    res = make_engine(num_gpu_blocks=200, block_size=16, max_num_seqs=20).run(w)
    assert res.num_preemptions > 0
    # 13-block prompts are admitted until the next one does not fit: 15 of them, 195 blocks
    assert res.steps.num_running.max() == 200 // 13
    assert 200 - 13 < res.peak_kv_blocks_used <= 200
    assert all(r.num_output_tokens == 300 for r in res.records)
    assert sum(r.num_preemptions for r in res.records) == res.num_preemptions


def test_full_reservation_never_preempts_but_admits_fewer() -> None:
    w = make_workload(200, 300, n=20)
    res = make_engine(num_gpu_blocks=200, max_num_seqs=20, kv_reservation="full").run(w)
    assert res.num_preemptions == 0
    assert res.steps.num_running.max() == 200 // 32  # 500 tokens = 32 blocks each


@pytest.mark.parametrize(
    "policy",
    [
        {"engine": "vllm"},
        {"engine": "sglang"},
        {"engine": "trtllm"},
        {"batching": "static"},
        {"batching": "dynamic", "batch_timeout_ms": 20},
    ],
)
@pytest.mark.parametrize("caching", [False, True])
def test_all_blocks_return_when_the_run_ends(policy: dict[str, object], caching: bool) -> None:
    """Exact: every block is free, or (prefix caching on) a cached prefix that no request
    references any more, which the KV manager counts as evictable; after preemptions too."""
    w = make_workload(200, 300, arrival_s=np.arange(20) * 0.05, system_prompt_tokens=64)
    engine = make_engine(
        num_gpu_blocks=200, max_num_seqs=20, enable_prefix_caching=caching, **policy
    )
    res, kv = run_keeping_kv(engine, w)
    if engine.config.kv_reservation == "incremental" and engine.config.batching == "continuous":
        assert res.num_preemptions > 0
    assert kv.num_used == kv.num_evictable
    assert kv.num_allocatable() == 200
    if caching:  # the system prompt's blocks stay cached, unreferenced
        assert kv.num_evictable == 64 // engine.config.block_size
    else:
        assert kv.num_used == 0


def test_a_request_larger_than_the_cache_is_rejected_by_name() -> None:
    with pytest.raises(ValueError, match=r"request 0 needs 5000 tokens .* only 100 blocks"):
        make_engine(num_gpu_blocks=100).run(make_workload(4000, 1000, n=1))


def test_shared_system_prompt_is_served_from_the_prefix_cache() -> None:
    cost = LinearStepCost(a_s=0.005, b_s_per_prefill_token=1e-4)
    arrivals = np.arange(10) * 1.0
    shared = make_workload(1100, 10, arrival_s=arrivals, system_prompt_tokens=1024)
    res = make_engine(cost).run(shared)
    cached = [r.num_cached_tokens for r in res.records]
    assert cached == [0] + [1024] * 9
    off = make_engine(cost, enable_prefix_caching=False).run(shared)
    assert summarize(res.records)["mean_ttft_ms"] < 0.3 * summarize(off.records)["mean_ttft_ms"]


def test_trace_hash_ids_hit_only_their_common_prefix() -> None:
    hashes = ((1, 2, 3), (1, 2, 9), (7, 8, 9))
    w = make_workload(1536, 4, arrival_s=[0.0, 1.0, 2.0], prefix_hashes=hashes)
    res = make_engine().run(w)
    assert [r.num_cached_tokens for r in res.records] == [0, 1024, 0]


def test_lru_eviction_frees_unreferenced_prefix_blocks() -> None:
    kv = KVCacheManager(10, 16, blocks_per_hash=2)
    assert kv.allocate(4)
    assert kv.register([1, 2]) == 2  # the 4 blocks become cache entries
    kv.release([1, 2])  # unreferenced but cached
    assert kv.num_used == 4 and kv.num_allocatable() == 10
    assert kv.allocate(8)  # evicts the oldest entry (hash 1) to make room
    assert kv.num_cached_prefix([1, 2]) == 0 and kv.num_cached_prefix([2]) == 1
