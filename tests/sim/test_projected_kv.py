"""SGLang's projected KV admission (`llmsizer.sim.batching.projected_kv`, `kv_reservation`
`projected`): the check against a step-by-step count of the pool, and the scheduler that
holds a prompt until a running request finishes instead of preempting."""

from __future__ import annotations

import numpy as np
import pytest

from llmsizer.sim.batching.projected_kv import RESERVE_TOKENS, projected_ok

from .conftest import drive, make_engine, make_request, make_scheduler, make_workload, step


def lowest_free(free_tokens: float, left: list[int], held: list[int]) -> float:
    """Decode step by step with nobody joining: the fewest free tokens, less the reserve of
    one a request, at any step. At step t every request with tokens left >= t grows by one
    token a step, and those with fewer left have finished and given back what they held."""
    worst = np.inf
    for t in range(1, max(left, default=0) + 1):
        alive = [j for j in range(len(left)) if left[j] >= t]
        freed = sum(held[j] for j in range(len(left)) if 0 < left[j] < t)
        worst = min(worst, free_tokens + freed - t * len(alive) - RESERVE_TOKENS * len(alive))
    return worst


@pytest.mark.parametrize("seed", range(40))
def test_the_check_admits_exactly_when_the_pool_never_runs_dry(seed: int) -> None:
    """SGLang's sorted check equals counting the pool at every future step (the fewest free
    tokens come just before a request finishes)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 8))
    left = [int(x) for x in rng.integers(0, 40, n)]
    held = [int(x) for x in rng.integers(1, 60, n)]
    free = float(rng.integers(0, 200))
    assert projected_ok(free, left, held) == (lowest_free(free, left, held) > 0)


def test_a_long_request_binds_even_when_the_pool_holds_everyone_now() -> None:
    """Free 60: both requests fit today (10 tokens), and the short one's 10 steps too, but the
    long one grows 100 tokens while the short one gives back only its 5."""
    assert projected_ok(60, [10, 100], [5, 5]) is False
    assert projected_ok(60 + 41, [10, 100], [5, 5]) is True  # 60 + 41 + 5 - 100 > 1


def test_a_request_with_nothing_left_to_generate_counts_for_nothing() -> None:
    assert projected_ok(3, [0, 1], [1000, 1]) is True


def config(blocks: int) -> dict[str, object]:
    return {
        "engine": "sglang",
        "kv_reservation": "projected",
        "num_gpu_blocks": blocks,
        "block_size": 1,
        "overlap_scheduler": False,
    }


def test_a_prompt_waits_until_a_request_finishes_and_nobody_is_preempted() -> None:
    """1,000 tokens, requests of 100 + 300: two can decode to their end (800), a third would
    need 1,200, so it waits for the first two to finish; incremental admission takes more
    and preempts."""
    w = make_workload(100, 300, n=6)
    res = make_engine(**config(1000)).run(w)
    assert res.num_preemptions == 0
    assert res.steps.num_running.max() == 2
    first_done = max(r.token_times_s[-1] for r in res.records[:2])
    assert min(r.scheduled_s for r in res.records[2:] if r.scheduled_s is not None) >= first_done
    greedy = make_engine(**{**config(1000), "kv_reservation": "incremental"}).run(w)
    assert greedy.num_preemptions > 0 and greedy.steps.num_running.max() > 2


def test_a_refused_prompt_joins_in_the_step_after_a_request_finishes() -> None:
    """700 tokens: a (100 + 300) and b (100 + 200) can both decode to their end, c (100 +
    300) on top cannot (700 - 200 - 100 - 200 x 3 < 3). The check does not change while they
    decode (module docstring), so c waits exactly until b finishes; then a, 100 tokens from
    its end, and c fit (700 - 300 - 100 - 100 x 2 > 2), long before a finishes."""
    s = make_scheduler(**config(700), max_num_seqs=8, max_num_batched_tokens=1024)
    a, b, c = make_request(0, 100, 300), make_request(1, 100, 200), make_request(2, 100, 300)
    for r in (a, b, c):
        s.add(r)
    b_done = joined = None
    for i in range(400):
        out, done = step(s, i)
        if any(r is c for r, _ in out.prefills):
            joined = i
            break
        if b in done:
            b_done = i
    assert b_done == 199 and joined == 200
    assert a.finish_clock - s.decoding.clock == 100 and s.num_preemptions == 0
    drive(s, [])
