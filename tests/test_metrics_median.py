"""`metrics.median` and `percentiles_of` are numpy's bit for bit, without `numpy.ma` (issue 13:
`np.median` and `np.percentile` import it, 40-85 ms of a one-case predict's start)."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from llmsizer.metrics import median, percentiles_of


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 10, 11, 1000, 1001])
def test_median_is_numpys_bit_for_bit(n: int) -> None:
    rng = np.random.default_rng(n)
    for values in (
        rng.exponential(0.3, n) * 1e3,  # latencies in ms
        rng.integers(0, 4, n).astype(float),  # ties
        np.full(n, 0.1),
        # most values equal: a speculating run's pooled ITL (zero gaps inside a chunk),
        # where `median` partitions at two order statistics even for an odd n
        np.where(rng.random(n) < 0.6, 0.0, rng.exponential(0.3, n)),
    ):
        assert median(values) == float(np.median(values))


def test_median_of_a_sample_with_nan_is_nan() -> None:
    assert math.isnan(median(np.array([1.0, np.nan, 2.0])))


def test_median_leaves_the_input_alone() -> None:
    values = np.array([3.0, 1.0, 2.0, 0.5])
    median(values)
    assert values.tolist() == [3.0, 1.0, 2.0, 0.5]


def test_a_summary_does_not_load_numpy_ma() -> None:
    code = (
        "import sys; import numpy as np; from llmsizer.metrics import summarize\n"
        "from llmsizer.records import RequestRecord\n"
        "r = [RequestRecord(i, 0.0, 1, 2, np.array([0.1 + i, 0.2 + i]), finish_s=0.2 + i)"
        " for i in range(3)]\n"
        "assert summarize(r)['median_ttft_ms'] > 0; print('numpy.ma' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("n", [1, 2, 3, 7, 100, 2999, 3000])
def test_percentiles_are_numpys_bit_for_bit(n: int) -> None:
    ps = (0.0, 1.0, 25.0, 50.0, 90.0, 95.0, 99.0, 99.9, 100.0)
    rng = np.random.default_rng(n)
    for values in (rng.lognormal(5, 1, n), rng.integers(0, 3, n).astype(float)):
        expected = np.percentile(values, list(ps))
        assert percentiles_of(values, ps) == [float(v) for v in expected]
    assert all(math.isnan(v) for v in percentiles_of(np.array([1.0, np.nan]), (50.0, 99.0)))


def test_pooled_itl_is_every_records_gaps_in_order() -> None:
    """`_itl_pooled` diffs all records' times at once and drops the gaps across records:
    the same values, in the same order, as a diff per record (single-token records have
    none), so a list summary's ITL mean and std are unchanged to the bit."""
    from llmsizer.metrics import _itl_pooled
    from llmsizer.records import RequestRecord

    rng = np.random.default_rng(7)
    records = []
    for i, n in enumerate([1, 5, 1, 1, 2, 40, 3, 1]):
        times = np.cumsum(rng.exponential(0.02, n)) + i  # later records start later
        records.append(RequestRecord(i, float(i), 8, n, times, finish_s=float(times[-1])))
    expected = np.concatenate([np.diff(r.token_times_s) for r in records])
    pooled = _itl_pooled(records)
    assert pooled.tolist() == expected.tolist()
    assert _itl_pooled(records[:1]).size == 0


@pytest.mark.parametrize("num_records", [3, 4])
def test_a_summary_reads_median_and_percentiles_from_one_partition(num_records: int) -> None:
    """`summarize` takes each latency's median and percentiles from one partition: numpy's
    values still, on a pooled ITL sample that is mostly zero gaps (tokens of one chunk)."""
    from llmsizer.metrics import summarize
    from llmsizer.records import RequestRecord

    rng = np.random.default_rng(num_records)
    records = []
    for i in range(num_records):
        steps = np.cumsum(rng.exponential(0.03, 50)) + i
        times = np.repeat(steps, rng.integers(1, 4, 50))  # 1-3 tokens a step
        records.append(RequestRecord(i, float(i), 8, times.size, times, finish_s=times[-1]))
    out = summarize(records, percentiles=(50.0, 95.0, 99.0))
    itl_ms = np.concatenate([np.diff(r.token_times_s) for r in records]) * 1e3
    assert out["median_itl_ms"] == float(np.median(itl_ms))
    for p in (50.0, 95.0, 99.0):
        assert out[f"p{p:g}_itl_ms"] == float(np.percentile(itl_ms, p))
    ttft_ms = np.array([(r.token_times_s[0] - r.arrival_s) * 1e3 for r in records])
    assert out["median_ttft_ms"] == float(np.median(ttft_ms))
