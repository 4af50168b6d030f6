"""Speculative decoding's KV accounting (issue 11): blocks are scaled by the workload's
simulated over real tokens, exact in the mean; `kv_overcommit_bound` states how far the
real KV in flight can exceed the capacity, and a simulation stays within it."""

from __future__ import annotations

import numpy as np
import pytest

from llmsizer.instance.speculation import (
    SpeculativeSpec,
    acceptance_rates,
    decode_steps,
    kv_overcommit_bound,
    run_speculative,
)
from llmsizer.sim import Engine, EngineConfig, FixedTicks
from llmsizer.workload import WorkloadSpec, make_workload

K = 4


def test_no_overcommit_when_every_request_accepts_alike() -> None:
    """Equal requests: each holds the workload's ratio, so the scaled capacity is exact
    (the first step's k lookahead slots are a smaller share than the last's)."""
    prompt, output = np.full(50, 500), np.full(50, 200)
    steps = decode_steps(output, np.full(50, 0.7), K)
    assert kv_overcommit_bound(prompt, output, steps, K) == pytest.approx(1.0)


def test_the_bound_by_hand_for_two_requests() -> None:
    """p = 10 each; request 0 gains 4 tokens a step (9 steps for 36 tokens after the first),
    request 1 one (36 steps). Real over simulated at the end: 51/20 and 51/47; the workload:
    102/67; the first step: 15/11. Bound: (51/20) / (102/67) = 1.675."""
    prompt, output = np.array([10, 10]), np.array([37, 37])
    steps = np.array([9, 36])
    assert kv_overcommit_bound(prompt, output, steps, K) == pytest.approx((51 / 20) / (102 / 67))


def _real_kv_reserved(records: list, k: int) -> np.ndarray:  # type: ignore[type-arg]
    """Tokens of KV a real engine reserving whole requests (TensorRT-LLM's
    GUARANTEED_NO_EVICT) holds at each token time: prompt + output + k lookahead slots per
    request from its admission to its last token, rebuilt from the records."""
    times = np.unique(np.concatenate([r.token_times_s for r in records]))
    held = np.zeros_like(times)
    for r in records:
        live = (times >= r.scheduled_s) & (times < r.token_times_s[-1])
        held[live] += r.num_prompt_tokens + r.num_output_tokens_requested + k
    return held


@pytest.mark.parametrize(("std", "within"), [(0.0, 1.0), (0.2, 1.15)])
def test_a_simulation_stays_within_the_bound(std: float, within: float) -> None:
    """KV-bound runs (reservation `full`: no preemption, so the records tell what each
    request held): the real KV in flight never passes bound x capacity; without a spread of
    acceptance the bound is 1, with a wide one (std 0.2) a batch of ~25 averages it out."""
    spec = SpeculativeSpec(num_speculative_tokens=K, acceptance_rate=0.7, acceptance_std=std)
    workload = make_workload(
        WorkloadSpec.model_validate(
            {"arrival": "burst", "num_requests": 300, "isl": 32, "osl": 256, "seed": 3}
        )
    )
    blocks, block_size = 400, 16  # 6,400 tokens: about 25 requests' real KV at once
    config = EngineConfig(
        num_gpu_blocks=blocks, block_size=block_size, max_num_seqs=256, kv_reservation="full"
    )
    engine = Engine(config, FixedTicks(0.01))
    result = run_speculative(engine, workload, spec, 1.0, np.random.default_rng(0))
    rates = acceptance_rates(spec, workload.num_requests, np.random.default_rng(0))
    steps = decode_steps(workload.num_output_tokens, rates, K)
    bound = kv_overcommit_bound(workload.num_prompt_tokens, workload.num_output_tokens, steps, K)
    held = _real_kv_reserved(list(result.records), K) / (blocks * block_size)
    assert result.num_preemptions == 0 and held.max() <= bound
    assert held.max() <= within and held.max() > 0.9  # KV bound: the capacity is used
    assert (bound == pytest.approx(1.0)) == (std == 0.0)
