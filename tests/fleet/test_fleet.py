"""A fleet of engines behind a router: invariants, routers, clear errors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from llmsizer.fleet import ROUTERS, simulate_fleet
from llmsizer.records import record_from_json, record_to_json, record_to_row
from llmsizer.sim import FixedTicks
from tests.sim.conftest import make_engine, make_workload


def _poisson(n: int, rate: float, seed: int = 0) -> np.ndarray:
    return np.cumsum(np.random.default_rng(seed).exponential(1 / rate, n))


def _varied(n: int = 2000, rate: float = 60.0, seed: int = 0):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    return make_workload(
        rng.integers(50, 800, n), rng.integers(5, 120, n), arrival_s=_poisson(n, rate, seed)
    )


def _key(r):  # type: ignore[no-untyped-def]
    return (r.request_id, r.arrival_s, r.scheduled_s, r.finish_s, r.token_times_s.tolist())


def test_one_instance_fleet_is_the_engine_exactly() -> None:
    """Routing to a single instance changes nothing: same records, field for field."""
    w = _varied()
    engine = make_engine(FixedTicks(0.004), max_num_seqs=16, max_num_batched_tokens=512)
    alone = engine.run(w).records
    for router in ROUTERS:
        if router == "prefix":
            continue
        fleet = simulate_fleet([engine], w, router).records
        assert [_key(r) for r in fleet] == [_key(r) for r in alone]
        assert {r.instance_id for r in fleet} == {0}


@pytest.mark.parametrize("router", sorted(set(ROUTERS) - {"prefix"}))
def test_every_request_is_served_once_by_one_instance(router: str) -> None:
    w = _varied()
    engines = [make_engine(FixedTicks(0.004), max_num_seqs=8) for _ in range(5)]
    res = simulate_fleet(engines, w, router, seed=1)
    assert [r.request_id for r in res.records] == list(range(w.num_requests))
    assert all(
        r.num_output_tokens == o for r, o in zip(res.records, w.num_output_tokens, strict=True)
    )
    counts = res.num_requests_per_instance
    assert counts.sum() == w.num_requests
    assert sum(len(i.records) for i in res.instances) == w.num_requests
    # every instance's own records are what the fleet says it served
    for i, inst in enumerate(res.instances):
        assert {r.request_id for r in inst.records} == {
            r.request_id for r in res.records if r.instance_id == i
        }
    assert counts.min() > 0


def test_round_robin_splits_evenly_and_a_fleet_run_is_deterministic() -> None:
    w = _varied(n=1003)
    engines = [make_engine(FixedTicks(0.004), max_num_seqs=8) for _ in range(4)]
    res = simulate_fleet(engines, w, "round_robin")
    assert res.num_requests_per_instance.tolist() == [251, 251, 251, 250]
    assert [r.instance_id for r in res.records[:5]] == [0, 1, 2, 3, 0]
    again = simulate_fleet(engines, w, "power_of_two", seed=3)
    once = simulate_fleet(engines, w, "power_of_two", seed=3)
    assert [_key(r) for r in again.records] == [_key(r) for r in once.records]


def test_least_outstanding_sends_to_the_idle_instance() -> None:
    """Two instances; a long request occupies instance 0, so the next ones go to 1."""
    w = make_workload([100, 100, 100], [200, 2, 2], arrival_s=[0.0, 0.5, 0.6])
    engines = [make_engine(FixedTicks(0.01), max_num_seqs=1) for _ in range(2)]
    res = simulate_fleet(engines, w, "least_outstanding")
    assert [r.instance_id for r in res.records] == [0, 1, 1]
    assert res.records[2].queue_s == pytest.approx(0.0)  # request 1 finished at 0.52


def test_least_kv_prefers_the_emptier_cache() -> None:
    w = make_workload([2000, 100, 100], [400, 5, 5], arrival_s=[0.0, 0.5, 0.6])
    engines = [make_engine(FixedTicks(0.01), max_num_seqs=4, num_gpu_blocks=400) for _ in "ab"]
    res = simulate_fleet(engines, w, "least_kv")
    assert [r.instance_id for r in res.records] == [0, 1, 1]


def test_prefix_router_keeps_a_conversation_where_its_prefix_is_cached() -> None:
    """Conversations whose turns extend one prefix (all behind a shared system prompt):
    affinity routing lands most turns where the earlier turns are cached, so the fleet
    serves about twice the prompt tokens from cache that random routing does."""
    rng = np.random.default_rng(12)  # not the router's seed: its draws would correlate
    n, conversations = 2000, 200
    conv = rng.integers(0, conversations, n)
    turn = np.zeros(n, dtype=np.int64)
    seen: dict[int, int] = {}
    for i, c in enumerate(conv):
        turn[i] = seen.get(int(c), 0) + 1
        seen[int(c)] = int(turn[i])
    hashes = tuple(
        (0, *(1000 * int(c) + k for k in range(1, int(t) + 1)))
        for c, t in zip(conv, turn, strict=True)
    )
    w = make_workload(
        (turn + 1) * 64,
        20,
        arrival_s=_poisson(n, 100.0),
        prefix_hashes=hashes,
        prefix_block_tokens=64,
    )
    engines = [
        make_engine(FixedTicks(0.004), max_num_seqs=16, block_size=16, num_gpu_blocks=300)
        for _ in range(8)
    ]
    cached, sticky = {}, {}
    for router in ("prefix", "random"):
        records = simulate_fleet(engines, w, router).records
        cached[router] = sum(r.num_cached_tokens for r in records)
        previous: dict[int, int | None] = {}
        same = []
        for r in records:
            c = int(conv[r.request_id])
            if c in previous:
                same.append(previous[c] == r.instance_id)
            previous[c] = r.instance_id
        sticky[router] = np.mean(same)
    assert sticky["prefix"] > 0.9  # measured 0.94
    assert sticky["random"] == pytest.approx(1 / 8, abs=0.03)
    assert cached["prefix"] > 1.8 * cached["random"]  # measured 752k against 377k tokens


def test_records_say_which_instance_served_them_in_every_format() -> None:
    w = _varied(n=50)
    engines = [make_engine(FixedTicks(0.004)) for _ in range(3)]
    r = simulate_fleet(engines, w, "round_robin").records[4]
    assert r.instance_id == 1
    assert record_from_json(record_to_json(r)).instance_id == 1
    assert record_to_row(r)["instance_id"] == 1
    single = dataclasses.replace(r, instance_id=None)
    assert "instance_id" not in record_to_json(single)
    assert "instance_id" not in record_to_row(single)


@pytest.mark.parametrize(
    ("engines", "workload", "router", "message"),
    [
        ([], _varied(n=5), "random", "at least 1 instance"),
        ([make_engine()], make_workload(10, 5, n=5, concurrency=2), "random", "closed loop"),
        ([make_engine(batching="static")], _varied(n=5), "random", "continuous batching"),
        ([make_engine()], _varied(n=5), "fastest", "unknown router 'fastest'"),
        ([make_engine()], _varied(n=5), "prefix", "has none"),
        (
            [make_engine(block_size=16), make_engine(block_size=32)],
            _varied(n=5),
            "random",
            "one block_size",
        ),
    ],
)
def test_bad_fleets_are_refused_with_a_clear_message(
    engines: list,
    workload,
    router: str,
    message: str,  # type: ignore[no-untyped-def]
) -> None:
    with pytest.raises(ValueError, match=message):
        simulate_fleet(engines, workload, router)


@pytest.mark.parametrize("router", ["least_outstanding", "round_robin"])
def test_bursts_of_simultaneous_arrivals_are_served(router: str) -> None:
    """Traces stamp many requests with one time (Mooncake's first ones are all at 0): an
    instance whose step ends exactly at such a time must not be advanced to it forever."""
    n = 40
    arrivals = np.repeat([0.0, 0.05, 0.05, 1.0], n // 4)  # steps of 10 ms end at 0.05
    w = make_workload(np.full(n, 30), np.full(n, 5), arrival_s=np.sort(arrivals))
    fleet = simulate_fleet([make_engine(FixedTicks(0.01), max_num_seqs=4)] * 2, w, router)
    assert sorted(r.request_id for r in fleet.records) == list(range(n))
    assert all(r.num_output_tokens == 5 for r in fleet.records)
