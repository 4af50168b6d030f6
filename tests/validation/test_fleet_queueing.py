"""A fleet behind a router against queueing theory.

Batch size 1 and one tick per token (prefill gives the first, each decode step one more)
make each instance a single-server queue whose service time is TICK x output length. With
geometric output lengths (mean 1/p) the service is near-exponential: E[S] = TICK/p,
E[S^2] = TICK^2 (2 - p) / p^2.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from llmsizer.fleet import simulate_fleet
from llmsizer.sim import FixedTicks
from tests.sim.conftest import make_engine, make_workload

TICK_S = 0.01
P = 0.1  # geometric output lengths, mean 10 tokens
NUM_INSTANCES = 4
RHO = 0.8
MEAN_S = TICK_S / P
SECOND_MOMENT_S2 = TICK_S**2 * (2 - P) / P**2
RATE = RHO * NUM_INSTANCES / MEAN_S  # fleet arrivals per second


def _waits(router: str, seeds: range = range(2), n: int = 30_000) -> np.ndarray:
    waits = []
    for seed in seeds:
        rng = np.random.default_rng(100 + seed)
        w = make_workload(
            10, rng.geometric(P, n), arrival_s=np.cumsum(rng.exponential(1 / RATE, n))
        )
        engines = [make_engine(FixedTicks(TICK_S), max_num_seqs=1) for _ in range(NUM_INSTANCES)]
        records = simulate_fleet(engines, w, router, seed=seed).records
        waits.append(np.array([r.queue_s for r in records]))
    return np.concatenate(waits)


def _erlang_c_wait_s(c: int, rho: float, mean_s: float) -> float:
    """M/M/c mean wait (Erlang C): one shared queue, the best any dispatcher can do."""
    a = rho * c
    head = sum(a**k / math.factorial(k) for k in range(c))
    tail = a**c / math.factorial(c) * c / (c - a)
    return tail / (head + tail) * mean_s / (c - a)


def test_random_routing_is_n_independent_mg1_queues() -> None:
    """Random routing thins the Poisson stream into N Poisson streams of rate lambda/N, each
    an M/G/1 queue: Pollaczek-Khinchine Wq = (lambda/N) E[S^2] / (2 (1 - rho)) = 0.380 s
    (measured 0.383 s over 60,000 requests)."""
    expected = (RATE / NUM_INSTANCES) * SECOND_MOMENT_S2 / (2 * (1 - RHO))
    assert _waits("random").mean() == pytest.approx(expected, rel=0.04)


def test_join_the_shortest_queue_beats_random_on_the_tail() -> None:
    """Least outstanding requests (join the shortest queue) at rho = 0.8 on 4 instances:
    p99 wait 0.64 s against 2.05 s at random (M/M/1 theory: ln(100 rho) / (mu (1 - rho)) =
    2.19 s), and its mean wait (0.088 s) lies between the pooled M/M/c queue (Erlang C,
    0.075 s, a lower bound for any dispatcher) and random's M/G/1 (0.380 s)."""
    jsq, rnd = _waits("least_outstanding"), _waits("random")
    assert np.percentile(jsq, 99) < 0.4 * np.percentile(rnd, 99)
    assert _erlang_c_wait_s(NUM_INSTANCES, RHO, MEAN_S) < jsq.mean() < 0.3 * rnd.mean()
    mm1_p99 = math.log(100 * RHO) / ((1 / MEAN_S) * (1 - RHO))
    assert np.percentile(rnd, 99) == pytest.approx(mm1_p99, rel=0.1)
