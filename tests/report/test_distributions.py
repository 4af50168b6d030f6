"""Latency distributions: the same samples as the metrics, histograms, files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from llmsizer.metrics import summarize
from llmsizer.report import (
    distributions_figure,
    distributions_html,
    distributions_png,
    latency_histograms,
    latency_samples,
)
from llmsizer.report.distributions import histogram

from .conftest import continuous, make_record


def mixed_records() -> list:
    """Varied lengths, a single-token output (no TPOT) and a failure (left out)."""
    return [
        *continuous(60, 4),
        make_record(100, arrival_s=0.1, scheduled_s=0.1, first_token_s=0.3, finish_s=0.3,
                    num_output_tokens=1),
        make_record(101, arrival_s=0.1, scheduled_s=0.1, first_token_s=0.2, finish_s=0.9,
                    error="timeout"),
    ]  # fmt: skip


@pytest.mark.parametrize("metric", ["ttft", "tpot", "itl", "e2el"])
def test_samples_agree_with_the_metrics(metric: str) -> None:
    records = mixed_records()
    summary = summarize(records)
    ms = latency_samples(records)[metric] * 1e3
    assert ms.mean() == pytest.approx(summary[f"mean_{metric}_ms"])
    assert np.percentile(ms, 99) == pytest.approx(summary[f"p99_{metric}_ms"])


def test_sample_counts() -> None:
    records = mixed_records()
    samples = latency_samples(records)
    ok = [r for r in records if r.ok]
    assert samples["ttft"].size == samples["e2el"].size == len(ok) == 61
    assert samples["tpot"].size == sum(r.num_output_tokens > 1 for r in ok)
    assert samples["itl"].size == sum(r.num_output_tokens - 1 for r in ok)
    assert np.all(samples["itl"] > 0)  # no gap spans two requests


def test_histogram() -> None:
    values = np.array([0.01, 0.02, 0.02, 0.03, 0.5])
    h = histogram(values, bins=7)
    assert h is not None
    assert h.counts.sum() == 5 and h.counts.size == 7
    assert h.edges_s[0] == 0.01 and h.edges_s[-1] == 0.5
    assert h.percentiles_s[50.0] == 0.02
    assert h.unit.label == "ms"
    same = histogram(np.full(4, 0.025))  # a fixed step cost: every TPOT equal
    assert same is not None and same.counts.tolist() == [4]
    assert histogram(np.zeros(0)) is None


def test_files(tmp_path: Path) -> None:
    records = mixed_records()
    png = distributions_png(records, tmp_path / "d.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    html = distributions_html(records, tmp_path / "d.html").read_text()
    assert html.count("* plotly.js v") == 1 and '<script src="http' not in html


def test_no_samples() -> None:
    histograms = latency_histograms([])
    assert all(h is None for h in histograms.values())
    fig = distributions_figure(histograms)  # each panel says "no samples"
    assert [ax.texts[0].get_text() for ax in fig.axes] == ["no samples"] * 4


def test_equal_up_to_rounding_is_one_bin() -> None:
    values = np.array([0.01, 0.01 + 1e-18, 0.03 - 0.02])  # float noise around 10 ms
    h = histogram(values)
    assert h is not None and h.counts.tolist() == [3]


def test_itl_of_big_runs_comes_from_every_kth_request() -> None:
    records = continuous(60, 4)
    all_gaps = latency_samples(records)["itl"].size
    hists = latency_histograms(records, max_itl_samples=all_gaps // 3)
    itl = hists["itl"]
    assert itl is not None and itl.note == "ITL of 1 in 4 requests"
    assert itl.num_samples == latency_samples(records, itl_every=4)["itl"].size < all_gaps
    ttft = hists["ttft"]
    assert ttft is not None and ttft.note == "" and ttft.num_samples == 60
