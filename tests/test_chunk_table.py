"""A `ChunkTable` (a speculating run's records of verify steps, each step a chunk of tokens,
issue 11) is its records of tokens: indexing builds what the whole-table mapping to tokens
builds (`instance.speculation._in_tokens`), and its summary, read off the steps in
O(steps), is the summary of those records: every key equal but the pooled ITL's mean and
std, sums in another order (`metrics`' module docstring, as a `RecordTable`'s), on random
runs with a held first token, single-token requests and slices of the table."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmsizer.instance.speculation import _in_tokens
from llmsizer.metrics import Slo, summarize
from llmsizer.records import ChunkTable, RecordTable
from llmsizer.sim import Engine, EngineConfig, LinearStepCost
from llmsizer.workload import Workload
from tests.test_metrics_by_step import SUM_ORDER_KEYS


def assert_same_summary(got: dict[str, float], want: dict[str, float]) -> None:
    """Equal summaries (keys in order, NaN equal to NaN), the sums of `SUM_ORDER_KEYS`
    within their relative tolerance."""
    assert list(got) == list(want)
    for key, value in want.items():
        if key in SUM_ORDER_KEYS:
            assert got[key] == pytest.approx(value, rel=SUM_ORDER_KEYS[key], abs=1e-12), key
        else:
            assert got[key] == value or (math.isnan(got[key]) and math.isnan(value)), key


def chunk_table(seed: int, n: int, delay_s: float) -> tuple[ChunkTable, np.ndarray]:
    """A run's step records as chunks of tokens, each request `num_output` tokens (one to
    three times its steps, or 1), as `InSteps.in_tokens` builds them; and `num_output`."""
    rng = np.random.default_rng(seed)
    w = Workload(
        num_prompt_tokens=rng.integers(1, 800, n),
        num_output_tokens=rng.integers(1, 60, n),
        arrival_s=np.cumsum(rng.exponential(0.03, n)),
    )
    cost = LinearStepCost(a_s=0.005, b_s_per_prefill_token=1e-5, d_s_per_context_token=1e-8)
    table = Engine(EngineConfig(max_num_seqs=8), cost, first_token_delay_s=delay_s).run(w).records
    assert isinstance(table, RecordTable)
    times = table.num_output_tokens
    num_output = np.where(rng.random(n) < 0.1, 1, times + rng.integers(0, 2 * times + 1))
    num_tokens = np.where((times > 1) & (num_output > 1), num_output, times)
    columns = {f: getattr(table, f) for f in RecordTable.__dataclass_fields__}
    columns["num_output_tokens_requested"] = num_output
    return ChunkTable(**columns, num_tokens=num_tokens), num_output


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 40),
    delay_s=st.sampled_from([0.0, 0.02, 0.3]),
    cut=st.integers(0, 10),
    slo=st.booleans(),
)
def test_a_chunk_tables_summary_is_its_records(
    seed: int, n: int, delay_s: float, cut: int, slo: bool
) -> None:
    table, num_output = chunk_table(seed, n, delay_s)
    part = table[min(cut, n) :]
    assert isinstance(part, ChunkTable)
    listed = _in_tokens(part, num_output[part.request_id])  # the production mapping
    assert len(listed) == len(part)
    for got, want in zip(part, listed, strict=True):
        np.testing.assert_array_equal(got.token_times_s, want.token_times_s)
        assert got.num_output_tokens_requested == want.num_output_tokens_requested
        assert (got.arrival_s, got.finish_s, got.scheduled_s) == (
            want.arrival_s,
            want.finish_s,
            want.scheduled_s,
        )
    limits = Slo(ttft_s=0.05, tpot_s=0.004, e2el_s=0.3) if slo else None
    ps = (50.0, 90.0, 95.0, 99.0)
    got = summarize(part, slo=limits, percentiles=ps)
    assert_same_summary(got, summarize(listed, slo=limits, percentiles=ps))
    assert summarize(part[len(part) :]) == summarize([])  # an empty slice


def test_a_chunk_gets_at_least_one_token() -> None:
    table, _ = chunk_table(1, 20, 0.0)
    fields = {f: getattr(table, f) for f in ChunkTable.__dataclass_fields__}
    fields["num_tokens"] = table.num_output_tokens - 1
    with pytest.raises(ValueError, match=r"request 0 gets .* tokens over .* chunk times"):
        ChunkTable(**fields)
