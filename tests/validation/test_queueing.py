"""The simulator against queueing theory."""

from __future__ import annotations

import numpy as np
import pytest

from llmsizer.metrics import summarize
from llmsizer.sim import FixedTicks
from tests.sim.conftest import make_engine, make_workload

SERVICE_S = 0.1


@pytest.mark.parametrize("rho", [0.5, 0.8])
def test_batch_of_one_is_md1_and_matches_pollaczek_khinchine(rho: float) -> None:
    """Batch size 1, one fixed-length step per request, Poisson arrivals: an M/D/1 queue.

    Pollaczek-Khinchine: Wq = rho * S / (2 (1 - rho)) for deterministic service S.
    """
    waits = []
    for seed in range(4):
        rng = np.random.default_rng(seed)
        n = 50_000
        arrivals = np.cumsum(rng.exponential(SERVICE_S / rho, n))
        w = make_workload(100, 1, arrival_s=arrivals)
        engine = make_engine(FixedTicks(tick_s=SERVICE_S), max_num_seqs=1)
        records = engine.run(w).records
        waits.append(np.mean([r.queue_s for r in records]))
    expected = rho * SERVICE_S / (2 * (1 - rho))
    assert np.mean(waits) == pytest.approx(expected, rel=0.03)


def test_littles_law_holds_for_continuous_batching() -> None:
    """L = lambda W: the time-average number of requests in the engine equals the arrival
    rate times the mean time in the engine, measured independently from the step log."""
    rng = np.random.default_rng(3)
    n = 20_000
    rate = 40.0
    arrivals = np.cumsum(rng.exponential(1 / rate, n))
    w = make_workload(rng.integers(50, 500, n), rng.integers(10, 100, n), arrival_s=arrivals)
    res = make_engine(FixedTicks(0.005), max_num_seqs=64).run(w)
    summary = summarize(res.records)
    steps = res.steps
    dt = steps.end_s - steps.start_s
    # in the engine during a step: running plus waiting (sampled at step start)
    in_system = steps.num_running + steps.num_waiting
    span = steps.end_s[-1] - steps.start_s[0]
    l_time_avg = float((in_system * dt).sum()) / span
    lam = n / span
    w_mean = summary["mean_e2el_ms"] / 1e3
    assert l_time_avg == pytest.approx(lam * w_mean, rel=0.05)
