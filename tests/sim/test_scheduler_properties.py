"""What every batching policy promises at every step, checked on random loads without the
engine: the step's token budget and seat count, the policy's order, and KV accounting that
agrees with the tokens the running requests hold.

The KV rule, from the policies' docstrings (prefix caching off):

- incremental: a request holds ceil(tokens in KV after this step / block_size) blocks;
- full: a request holds ceil((prompt + max output) / block_size) blocks from admission on;
- static / dynamic: every member holds ceil((longest prompt + longest output) / block_size).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from llmsizer.sim.batching.base import Scheduler, SchedulerOutput
from llmsizer.sim.batching.continuous import ContinuousScheduler
from llmsizer.sim.batching.static import StaticScheduler
from llmsizer.sim.request import SimRequest, Status

from .conftest import drive, make_request, make_scheduler

POLICIES = [
    {"engine": "vllm"},
    {"engine": "sglang"},
    {"engine": "trtllm"},
    {"engine": "vllm", "enable_chunked_prefill": False},
    {"engine": "sglang", "kv_reservation": "full"},
    {"batching": "static"},
    {"batching": "dynamic", "batch_timeout_ms": 20},
]


def tokens_in_kv(s: Scheduler, r: SimRequest) -> int:
    """Tokens `r` has in KV before the step being decided (a decoding request's count runs
    with the decode clock: see `DecodeSet`)."""
    if r.status is Status.DECODING:
        return r.num_computed_tokens + s.decoding.clock - r.decode_entry_clock
    return r.num_computed_tokens


def blocks_held_by_theory(s: Scheduler, out: SchedulerOutput) -> int:
    """Blocks the running requests must hold once step `out` is decided (caching off)."""
    blocks_for = s.kv.blocks_for
    if isinstance(s, StaticScheduler):
        longest = max(r.num_prompt_tokens for r in s.batch) + max(
            r.num_output_tokens for r in s.batch
        )
        return blocks_for(longest) * s.num_running
    assert isinstance(s, ContinuousScheduler)
    if s.kv_reservation == "full":
        return sum(blocks_for(r.num_prompt_tokens + r.num_output_tokens) for r in s.running)
    scheduled = dict(out.prefills)
    total = 0
    for r in s.running:
        if r.status is Status.DECODING:
            total += blocks_for(tokens_in_kv(s, r) + out.decoded)  # the slot this step writes
        else:
            total += blocks_for(r.num_computed_tokens + scheduled.get(r, 0))
    return total


def check_step(s: Scheduler, out: SchedulerOutput, caching: bool) -> None:
    assert s.num_running <= s.max_num_seqs
    if s.kv.capacity is not None:
        assert s.kv.num_used <= s.kv.capacity
    if not caching:
        assert s.kv.num_used == blocks_held_by_theory(s, out)
    if isinstance(s, StaticScheduler):
        assert out.num_prefill_tokens == out.batch.num_prefill_tokens
        assert out.batch.num_decode_seqs in (0, len(s.batch))
        assert s.num_preemptions == 0
        return
    assert isinstance(s, ContinuousScheduler)
    assert out.batch.num_tokens <= s.max_num_batched_tokens
    assert out.num_prefill_tokens == out.batch.num_prefill_tokens
    assert [c.num_context_tokens for c in out.batch.prefill_chunks] == [
        r.num_computed_tokens for r, _ in out.prefills
    ]
    if not s.enable_chunked_prefill:  # whole prompts only
        assert all(n == r.num_remaining_prefill for r, n in out.prefills)
    if s.policy == "decode_first":  # every decoding request gets its token
        assert out.batch.num_decode_seqs == len(s.decoding)
    else:  # a step with prompt work runs no decodes
        assert not (out.prefills and out.decoded)
    if s.kv_reservation == "full":
        assert s.num_preemptions == 0


@settings(max_examples=60, deadline=None)
@given(
    policy=st.sampled_from(POLICIES),
    seed=st.integers(0, 2**31),
    n=st.integers(1, 30),
    max_num_seqs=st.integers(1, 8),
    extra_budget=st.integers(0, 300),
    block_size=st.sampled_from([1, 4, 16]),
    spare_blocks=st.one_of(st.none(), st.integers(0, 60)),
    caching=st.booleans(),
)
def test_every_step_keeps_the_policys_promises_and_every_block_returns(
    policy: dict[str, object],
    seed: int,
    n: int,
    max_num_seqs: int,
    extra_budget: int,
    block_size: int,
    spare_blocks: int | None,
    caching: bool,
) -> None:
    rng = np.random.default_rng(seed)
    budget = max_num_seqs + extra_budget
    isl = np.minimum(rng.integers(1, 300, n), budget)  # whole prompts must fit the budget
    osl = rng.integers(1, 60, n)
    if policy.get("enable_chunked_prefill") is False:
        # and so must a preempted request's recompute, prompt plus output so far (a known
        # stall otherwise: see test_continuous_scheduler's xfail)
        osl = np.minimum(osl, budget - isl + 1)
    arrival_s = np.round(np.cumsum(rng.exponential(0.02, n)), 2)
    # two groups of requests share a prefix of up to 3 blocks each when caching is on
    shared = min(3, int(isl.min()) // block_size)
    hashes = [tuple(1000 * (i % 2) + j for j in range(shared)) if caching else () for i in range(n)]
    need = -(-(isl + osl) // block_size)
    num_gpu_blocks = None if spare_blocks is None else int(need.max()) + spare_blocks
    s = make_scheduler(
        **policy,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=budget,
        block_size=block_size,
        num_gpu_blocks=num_gpu_blocks,
        enable_prefix_caching=caching,
    )
    requests = [
        make_request(i, int(isl[i]), int(osl[i]), arrival_s=arrival_s[i], block_hashes=hashes[i])
        for i in range(n)
    ]

    drive(s, requests, check=lambda s, out: check_step(s, out, caching))

    assert [r.num_generated for r in requests] == osl.tolist()
    # every block is free, or a cached prefix nobody references (evictable): exactly
    assert s.kv.num_used == s.kv.num_evictable
    if not caching:
        assert s.kv.num_used == 0
    if s.kv.capacity is not None:
        assert s.kv.num_allocatable() == s.kv.capacity
