"""TensorRT-LLM's attention-DP balancing (`llmsizer.sim.batching.attention_dp`), decided step
by step: a held prompt runs when every rank has one, after the timeout counted from the last
reset, or at once when some rank has nothing to decode."""

from __future__ import annotations

import pytest

from llmsizer.sim.batching.base import Scheduler
from llmsizer.sim.request import SimRequest

from .conftest import make_request, make_scheduler, step


def balanced(ranks: int = 2, timeout: int = 5, wait: int = 0) -> Scheduler:
    return make_scheduler(
        max_num_seqs=8 * ranks,
        max_num_batched_tokens=64 * ranks,
        num_attention_dp_ranks=ranks,
        attention_dp_enable_balance=True,
        attention_dp_timeout_iters=timeout,
        attention_dp_batching_wait_iters=wait,
    )


def admitted_at(s: Scheduler, r: SimRequest, start: int, stop: int) -> int:
    """The first step from `start` whose prompts include `r`."""
    for i in range(start, stop):
        out, _ = step(s, i)
        if any(p is r for p, _ in out.prefills):
            return i
    raise AssertionError(f"{r} not admitted by step {stop}")


def test_an_idle_engine_runs_the_first_prompts_at_once() -> None:
    s = balanced()
    a, b = make_request(0, 8, 100), make_request(1, 8, 100)
    s.add(a)
    s.add(b)  # one on each rank (the router balances active requests)
    assert step(s, 0)[0].prefills == [(a, 8), (b, 8)]


@pytest.mark.parametrize("timeout", [3, 5, 20])
def test_a_prompt_on_one_rank_waits_for_the_next_multiple_of_the_timeout(timeout: int) -> None:
    s = balanced(timeout=timeout)
    a, b, c = make_request(0, 8, 100), make_request(1, 8, 100), make_request(2, 8, 2)
    s.add(a)
    s.add(b)
    step(s, 0)  # every rank had a prompt: the count is reset at step 0
    s.add(c)  # rank 0; rank 1 has none, both decode: held until the count reaches timeout
    assert admitted_at(s, c, 1, 3 * timeout) == timeout


def test_the_count_runs_on_steps_without_prompts() -> None:
    s = balanced(timeout=5)
    a, b, c = make_request(0, 8, 100), make_request(1, 8, 100), make_request(2, 8, 2)
    s.add(a)
    s.add(b)
    for i in range(7):  # steps 0-6: the count was reset at 0 and 5
        step(s, i)
    s.add(c)
    assert admitted_at(s, c, 7, 20) == 10


def test_a_prompt_for_every_rank_runs_at_once_in_one_step() -> None:
    s = balanced(ranks=3, timeout=50)
    first = [make_request(i, 8, 100) for i in range(3)]
    for r in first:
        s.add(r)
    step(s, 0)
    step(s, 1)
    late = [make_request(10 + i, 8, 100) for i in range(3)]
    s.add(late[0])
    s.add(late[1])  # two of three ranks: held
    assert step(s, 2)[0].prefills == [] and step(s, 3)[0].prefills == []
    s.add(late[2])  # the third rank's: all three run in the next step together
    assert step(s, 4)[0].prefills == [(r, 8) for r in late]


def test_a_rank_with_nothing_to_decode_gets_its_prompt_at_once() -> None:
    s = balanced(timeout=50)
    a, b = make_request(0, 8, 100), make_request(1, 8, 2)
    s.add(a)
    step(s, 0)
    s.add(b)  # rank 1 (fewest active) decodes nothing: TensorRT-LLM does not wait
    assert step(s, 1)[0].prefills == [(b, 8)]


def test_batching_wait_holds_a_full_round_while_every_rank_decodes() -> None:
    s = balanced(timeout=50, wait=3)
    first = [make_request(i, 8, 100) for i in range(2)]
    for r in first:
        s.add(r)
    step(s, 0)  # nothing decoded yet: no batching wait
    late = [make_request(10 + i, 8, 100) for i in range(2)]
    for r in late:
        s.add(r)
    assert admitted_at(s, late[0], 1, 20) == 4  # steps 1-3 wait, step 4 runs both


def test_without_balancing_a_prompt_joins_the_next_step() -> None:
    s = make_scheduler(max_num_seqs=16, max_num_batched_tokens=128, num_attention_dp_ranks=2)
    a, b, c = make_request(0, 8, 100), make_request(1, 8, 100), make_request(2, 8, 2)
    s.add(a)
    s.add(b)
    step(s, 0)
    s.add(c)
    assert step(s, 1)[0].prefills == [(c, 8)]


def test_finished_requests_leave_their_rank() -> None:
    """Ranks are refilled where requests finished: a finished request's rank gets the next."""
    s = balanced(timeout=50)
    a, b = make_request(0, 8, 3), make_request(1, 8, 100)
    s.add(a)
    s.add(b)
    for i in range(3):  # a's first token at step 0, its last at step 2
        step(s, i)
    assert a.num_generated == 3
    c = make_request(2, 8, 100)
    s.add(c)  # rank 0 is free again, and decodes nothing: c runs at once
    assert step(s, 3)[0].prefills == [(c, 8)]


def test_an_attention_dp_deployment_gives_its_engine_the_ranks() -> None:
    from llmsizer.instance import DeploymentSpec, make_instance

    spec = DeploymentSpec.model_validate(
        {
            "model": "deepseek-r1",
            "gpu": "b200-sxm",
            "precision": "fp4",
            "tp": 1,
            "dp": 8,
            "expert_parallel_size": 8,
            "engine": "trtllm",
            "attention_dp_enable_balance": True,
        }
    )
    engine = make_instance(spec, max_model_len=4096).engine
    assert engine.num_attention_dp_ranks == 8 and engine.attention_dp_enable_balance
