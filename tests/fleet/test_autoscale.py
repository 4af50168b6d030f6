"""The autoscaled fleet: scales with the load, pays for start-up and drain, never routes to
an instance before it has loaded."""

from __future__ import annotations

import numpy as np
import pytest

from llmsizer.fleet.autoscale import Autoscaler, simulate_autoscaled
from llmsizer.sim import FixedTicks
from tests.sim.conftest import make_engine, make_workload

ENGINE = make_engine(FixedTicks(0.01), max_num_seqs=8)  # ~16 req/s of 100/50 tokens


def _step_load():  # type: ignore[no-untyped-def]
    """50 req/s for 300 s, then 5 req/s for 600 s (Poisson)."""
    rng = np.random.default_rng(0)
    busy = np.cumsum(rng.exponential(1 / 50, 15_000))
    busy = busy[busy < 300]
    quiet = 300 + np.cumsum(rng.exponential(1 / 5, 3000))
    arrivals = np.concatenate([busy, quiet[quiet < 900]])
    return make_workload(100, 50, arrival_s=arrivals)


SCALER = Autoscaler(target_in_flight=4, max_instances=8, startup_s=60, cooldown_s=120)


def test_it_scales_up_with_the_load_and_down_after_the_cooldown() -> None:
    res = simulate_autoscaled(ENGINE, _step_load(), SCALER)
    busy = res.num_paid[res.tick_s < 300]
    quiet = res.num_paid[res.tick_s > 600]
    assert busy.max() >= 3 and quiet.max() <= 2
    assert res.num_paid[0] >= res.num_serving[0]
    # scale-down waits the cooldown after the last scale-up
    assert len(res.fleet.records) == _step_load().num_requests


def test_no_instance_takes_a_request_before_its_weights_are_loaded() -> None:
    res = simulate_autoscaled(ENGINE, _step_load(), SCALER)
    for i, start, end in res.paid_s:
        if start > 0:
            mine = [r.arrival_s for r in res.fleet.records if r.instance_id == i]
            taken = [t for t in mine if start <= t <= end]
            assert not taken or min(taken) >= start + SCALER.startup_s


def test_it_pays_less_than_a_fleet_fixed_at_the_peak() -> None:
    w = _step_load()
    res = simulate_autoscaled(ENGINE, w, SCALER)
    peak = int(res.num_paid.max())
    fixed_s = peak * float(w.arrival_s[-1])  # type: ignore[index]
    assert res.instance_seconds < 0.6 * fixed_s
    # at least the minimum fleet for the whole run
    assert res.instance_seconds >= float(w.arrival_s[-1])  # type: ignore[index]


def test_constant_light_load_stays_at_the_minimum() -> None:
    rng = np.random.default_rng(1)
    w = make_workload(100, 50, arrival_s=np.cumsum(rng.exponential(1 / 2, 1000)))
    res = simulate_autoscaled(
        ENGINE, w, Autoscaler(target_in_flight=4, max_instances=4, startup_s=60, min_instances=2)
    )
    assert set(res.num_paid.tolist()) == {2}
    assert {r.instance_id for r in res.fleet.records} <= {0, 1}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"target_in_flight": 0, "max_instances": 2, "startup_s": 1}, "target_in_flight"),
        ({"target_in_flight": 1, "max_instances": 0, "startup_s": 1}, "min_instances"),
        ({"target_in_flight": 1, "max_instances": 2, "startup_s": -1}, "startup_s"),
    ],
)
def test_a_bad_autoscaler_is_refused(kwargs: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ValueError, match=message):
        Autoscaler(**kwargs)
