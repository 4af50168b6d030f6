"""The summary of a simulated run, per step instead of per token (issue 13).

A `RecordTable` summary pools ITL as step-end differences weighted by the requests that
decoded across them. Its percentiles and medians must be the per-token computation's bit
for bit (same order statistics, numpy's interpolation), its means and stds within a stated
relative 1e-12, and every other key identical: checked against the list path, which pools
every gap of every request, on random small runs of every policy (preemption, prefill-first
steps, static padding, prefix hits, a held first token).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmsizer.metrics import Slo, WeightedSample, _table_itl, summarize
from llmsizer.records import RecordTable
from llmsizer.sim import Engine, EngineConfig, LinearStepCost
from llmsizer.workload import Workload

POLICIES = [
    {"engine": "vllm"},
    {"engine": "sglang"},  # prefill-first: decode runs are not one slice of the step log
    {"engine": "trtllm"},
    {"batching": "static"},
    {"batching": "dynamic", "batch_timeout_ms": 20},
    {"enable_chunked_prefill": False, "max_num_batched_tokens": 4096},
]
# Sums in another order than numpy's pairwise pooled sum (module docstring of metrics).
SUM_ORDER_KEYS = {"mean_itl_ms": 1e-12, "std_itl_ms": 1e-9}


def _run(
    policy: dict[str, object],
    seed: int,
    n: int,
    num_blocks: int | None,
    delay_s: float,
    shared_prompt: int,
) -> RecordTable:
    rng = np.random.default_rng(seed)
    w = Workload(
        num_prompt_tokens=rng.integers(1, 1500, n) + shared_prompt,
        num_output_tokens=rng.integers(1, 200, n),
        arrival_s=np.cumsum(rng.exponential(0.03, n)),
        system_prompt_tokens=shared_prompt,
    )
    cfg = EngineConfig(
        **{"max_num_seqs": 8, "num_gpu_blocks": num_blocks, **policy}  # type: ignore[arg-type]
    )
    cost = LinearStepCost(a_s=0.005, b_s_per_prefill_token=1e-5, d_s_per_context_token=1e-8)
    records = Engine(cfg, cost, first_token_delay_s=delay_s).run(w).records
    assert isinstance(records, RecordTable)
    return records


def assert_same_summary(by_step: dict[str, float], by_token: dict[str, float]) -> None:
    assert list(by_step) == list(by_token)
    for key, expected in by_token.items():
        if key in SUM_ORDER_KEYS:
            assert by_step[key] == pytest.approx(expected, rel=SUM_ORDER_KEYS[key], abs=1e-12)
        else:
            assert by_step[key] == expected, key


@settings(max_examples=60, deadline=None)
@given(
    policy=st.sampled_from(POLICIES),
    seed=st.integers(0, 2**31),
    n=st.integers(1, 40),
    num_blocks=st.one_of(st.none(), st.integers(120, 600)),
    delay_s=st.sampled_from([0.0, 0.0, 0.04, 0.3]),
    shared_prompt=st.sampled_from([0, 64]),
    warm=st.integers(0, 10),
)
def test_a_table_summarises_as_its_records_do(
    policy: dict[str, object],
    seed: int,
    n: int,
    num_blocks: int | None,
    delay_s: float,
    shared_prompt: int,
    warm: int,
) -> None:
    table = _run(policy, seed, n, num_blocks, delay_s, shared_prompt)
    slo = Slo(ttft_s=0.2, tpot_s=0.012, e2el_s=2.0)
    percentiles = (0.0, 25.0, 50.0, 90.0, 99.0, 99.9, 100.0)
    for part in (table, table[warm:]):
        by_token = summarize(list(part), slo=slo, percentiles=percentiles)
        assert_same_summary(summarize(part, slo=slo, percentiles=percentiles), by_token)


def test_the_pooled_itl_sample_is_kept_per_step_not_per_token() -> None:
    """O(steps): the weighted sample has at most one value per step, however long the
    outputs; the per-token pool it stands for has every gap. A held first token adds one
    value per request at most (its first gap after the hold), and one zero."""
    for delay_s in (0.0, 0.1):
        table = _run(
            {"engine": "vllm"}, seed=3, n=40, num_blocks=None, delay_s=delay_s, shared_prompt=0
        )
        sample = _table_itl(table, table.num_output_tokens > 1)
        gaps = sum(r.num_output_tokens - 1 for r in table)
        assert sample.size == gaps
        assert sample.values.size <= table.token_buffer.size + len(table) + 1 < gaps


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(
        st.floats(0.0, 1e3, allow_nan=False, allow_subnormal=False), min_size=1, max_size=30
    ),
    counts=st.lists(st.integers(1, 50), min_size=30, max_size=30),
    p=st.one_of(st.floats(0.0, 100.0), st.sampled_from([50.0, 90.0, 95.0, 99.0, 99.9])),
)
def test_weighted_percentiles_are_numpys_on_the_pooled_sample(
    values: list[float], counts: list[int], p: float
) -> None:
    v = np.asarray(values)
    c = np.asarray(counts[: len(values)], dtype=np.int64)
    pooled = np.repeat(v, c)
    w = WeightedSample.of(v, c)
    assert w.size == pooled.size
    assert w.percentile(p) == float(np.percentile(pooled, p))
    assert w.median() == float(np.median(pooled))
    assert w.mean() == pytest.approx(float(pooled.mean()), rel=1e-12, abs=1e-300)
    assert w.std() == pytest.approx(float(pooled.std()), rel=1e-9, abs=1e-9)


def test_a_record_from_the_table_is_the_requests_engine_times() -> None:
    """Spans: request i's tokens are one slice of the step end times when its decode steps
    follow its first token, and the client's times with a held first token."""
    table = _run({"engine": "vllm"}, seed=5, n=20, num_blocks=None, delay_s=0.0, shared_prompt=0)
    held = _run({"engine": "vllm"}, seed=5, n=20, num_blocks=None, delay_s=0.05, shared_prompt=0)
    for r, h in zip(table, held, strict=True):
        assert np.shares_memory(r.token_times_s, table.token_buffer)
        assert r.finish_s == r.token_times_s[-1]
        expected = np.maximum(r.token_times_s, r.token_times_s[0] + 0.05)
        assert np.array_equal(h.token_times_s, expected)
        assert h.finish_s == expected[-1]
        assert h.ttft_s == pytest.approx(r.ttft_s + 0.05)
    with pytest.raises(IndexError):
        table[len(table)]
    assert table[-1].request_id == len(table) - 1
    assert math.isclose(
        summarize(table[5:])["mean_ttft_ms"], summarize(list(table)[5:])["mean_ttft_ms"]
    )
