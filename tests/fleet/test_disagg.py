"""Disaggregated prefill/decode pools against the aggregated engine and the link."""

from __future__ import annotations

import numpy as np
import pytest

from llmsizer.fleet.disagg import KvTransfer, simulate_disaggregated
from llmsizer.sim import Engine, LinearStepCost
from tests.sim.conftest import make_engine, make_workload

# One prompt token costs what one decoding sequence does (b = c): the decode pool's first
# step (the first token's KV, a one-token chunk) then prices as the aggregated decode step.
COST = LinearStepCost(0.005, 2e-5, 2e-5, 1e-7)


def _engine() -> Engine:
    return make_engine(COST, max_num_seqs=64, max_num_batched_tokens=4096)


def _isolated(n: int = 60, seed: int = 0):  # type: ignore[no-untyped-def]
    """Requests 100 s apart: nothing queues, nothing shares a step (unbounded pools)."""
    rng = np.random.default_rng(seed)
    return make_workload(
        rng.integers(100, 3000, n), rng.integers(1, 200, n), arrival_s=np.arange(n) * 100.0
    )


def test_free_link_and_unbounded_pools_reduce_to_the_aggregated_engine() -> None:
    """Every token of every request at the same time as on one aggregated engine: the
    prefill is the aggregated prefill step, each decode step the aggregated decode step."""
    w = _isolated()
    agg = _engine().run(w).records
    dis = simulate_disaggregated([_engine()] * 3, [_engine()] * 2, w).records
    for a, d in zip(agg, dis, strict=True):
        assert d.num_output_tokens == a.num_output_tokens
        np.testing.assert_allclose(d.token_times_s, a.token_times_s, rtol=0, atol=1e-9)
        assert d.ttft_s == pytest.approx(a.ttft_s)


def test_the_kv_transfer_adds_latency_plus_bytes_over_bandwidth_to_ttft() -> None:
    w = _isolated(seed=1)
    link = KvTransfer(bytes_per_token=160_000, bytes_per_s=50e9, latency_s=0.002)
    agg = _engine().run(w).records
    dis = simulate_disaggregated([_engine()], [_engine()], w, link).records
    for a, d in zip(agg, dis, strict=True):
        if a.num_output_tokens == 1:  # answered by the prefill worker: nothing moves
            assert d.ttft_s == pytest.approx(a.ttft_s)
            continue
        moved = 0.002 + a.num_prompt_tokens * 160_000 / 50e9
        assert d.ttft_s == pytest.approx(a.ttft_s + moved, abs=1e-9)
        # decode admission waited for the transfer: the rest of the stream shifts by it
        np.testing.assert_allclose(d.token_times_s, a.token_times_s + moved, atol=1e-9)
        assert d.instance_id == 1  # the decode instance, after the one prefill instance


def test_a_closed_loop_keeps_its_concurrency_across_both_pools() -> None:
    rng = np.random.default_rng(2)
    n, clients = 600, 16
    w = make_workload(rng.integers(100, 3000, n), rng.integers(2, 200, n), concurrency=clients)
    link = KvTransfer(bytes_per_token=100_000, bytes_per_s=1e10, latency_s=1e-3)
    res = simulate_disaggregated([_engine()] * 2, [_engine()] * 2, w, link)
    records = res.records
    assert [r.num_output_tokens for r in records] == w.num_output_tokens.tolist()
    starts = np.array([r.arrival_s for r in records])
    ends = np.array([r.finish_s for r in records])
    assert (starts == 0).sum() == clients
    # in flight at each arrival: never more than the clients (a new one starts as one ends)
    in_flight = [((starts <= t) & (ends > t)).sum() for t in starts]
    assert max(in_flight) == clients
    assert sum(len(p.records) for p in res.prefill) == n
    assert sum(len(d.records) for d in res.decode) == n


def test_a_busy_decode_pool_delays_the_first_token_not_the_stream() -> None:
    """One decode slot for many requests: the decode worker streams the first token when it
    admits the request, so the wait for the slot is in TTFT and TPOT stays the decode
    step's (module docstring of `llmsizer.fleet.disagg`)."""
    rng = np.random.default_rng(3)
    n = 200
    w = make_workload(500, rng.integers(50, 100, n), arrival_s=np.cumsum(rng.exponential(0.05, n)))
    tight = [make_engine(COST, max_num_seqs=1)]
    dis = simulate_disaggregated([_engine()] * 4, tight, w).records
    agg = _engine().run(_isolated()).records
    alone = max(r.ttft_s for r in agg if r.ttft_s is not None)
    assert np.mean([r.ttft_s for r in dis]) > 20 * alone
    tpot = np.mean([r.tpot_s for r in agg if r.tpot_s])
    assert np.mean([r.tpot_s for r in dis]) == pytest.approx(tpot, rel=0.2)
    # at the handoff instead (a decode probe's view): TTFT the prefill's, the wait in TPOT
    handoff = simulate_disaggregated([_engine()] * 4, tight, w, first_token_at="handoff").records
    assert max(r.ttft_s for r in handoff) < 0.05
    assert np.mean([r.tpot_s for r in handoff]) > 5 * tpot
    for a, b in zip(dis, handoff, strict=True):  # the same schedule, told two ways
        assert a.finish_s == b.finish_s and a.token_times_s[0] >= b.token_times_s[0]


@pytest.mark.parametrize(("clients", "slots", "rel"), [(12, 4, 0.03), (24, 16, 0.1)])
def test_a_closed_loop_on_fewer_decode_slots_than_clients_obeys_littles_law(
    clients: int, slots: int, rel: float
) -> None:
    """N clients, K < N decode slots, every step tau: the decode pool is the bottleneck and
    finishes K requests every (n - 1) steps, so by Little's law a request spends
    N (n - 1) tau / K from sending to its last token. Its stream after the first token is
    n - 1 steps (TPOT tau), so TTFT = (N / K - 1)(n - 1) tau: the wait for a slot. With
    N < 2K a finished cohort's clients come back while the rest decode, and must be
    admitted then (a returning request waits at most a step for the one in flight)."""
    n_out, tau = 50, 0.010
    w = make_workload(100, n_out, n=40 * clients, concurrency=clients)
    prefill = [make_engine(max_num_seqs=64, max_num_batched_tokens=4096)] * 2
    decode = [make_engine(max_num_seqs=1)] * slots  # FixedTicks(tau)
    records = simulate_disaggregated(prefill, decode, w).records
    assert np.mean([r.tpot_s for r in records]) == pytest.approx(tau, rel=1e-6)
    wait = (clients / slots - 1) * (n_out - 1) * tau
    span = max(r.finish_s or 0.0 for r in records)
    assert len(records) / span == pytest.approx(slots / ((n_out - 1) * tau), rel=rel)
    assert np.mean([r.ttft_s for r in records]) == pytest.approx(
        wait, rel=rel, abs=rel * tau * n_out
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"bytes_per_token": -1.0, "bytes_per_s": 1e9}, "must be >= 0"),
        ({"bytes_per_token": 1.0, "bytes_per_s": 0.0}, "bytes_per_s must be > 0"),
    ],
)
def test_a_bad_link_is_refused(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        KvTransfer(**kwargs)


def test_an_empty_pool_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1 instance"):
        simulate_disaggregated([_engine()], [], _isolated(n=3))


def test_the_front_ends_first_token_hold_applies_once_as_on_the_aggregated_engine() -> None:
    """A held first chunk (`first_token_delay_s`) moves the disaggregated stream exactly as
    it moves the aggregated one: once, at the first token, not again at decode's first."""
    w = _isolated(seed=3)
    held = Engine(_engine().config, COST, first_token_delay_s=0.05)
    agg = held.run(w).records
    dis = simulate_disaggregated([held] * 3, [held] * 2, w).records
    for a, d in zip(agg, dis, strict=True):
        np.testing.assert_allclose(d.token_times_s, a.token_times_s, rtol=0, atol=1e-9)
    free = simulate_disaggregated([_engine()] * 3, [_engine()] * 2, w).records
    assert dis[0].ttft_s == pytest.approx(free[0].ttft_s + 0.05)
