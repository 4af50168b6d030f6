"""Summary and comparison tables, against golden text on a fixed-width console.

To regenerate a golden file after an intended change: `LLMSIZER_UPDATE_GOLDEN=1 pytest
tests/report`, then review the diff by eye before committing it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rich.console import Console

from llmsizer.metrics import Slo, summarize
from llmsizer.report import print_summary, rows_table, summary_rows, summary_table

from .conftest import continuous

GOLDEN = Path(__file__).parent / "golden"

# A summary as `summarize` returns it, written out so the golden text depends on rendering only.
SUMMARY: dict[str, float] = {
    "completed": 100,
    "failed": 2,
    "duration_s": 42.125,
    "total_input_tokens": 100_000,
    "total_output_tokens": 10_000,
    "request_throughput": 2.3739,
    "output_throughput": 237.39,
    "total_token_throughput": 2611.3,
    "request_goodput": 1.9,
    "mean_ttft_ms": 812.5,
    "median_ttft_ms": 640.0,
    "std_ttft_ms": 300.0,
    "p50_ttft_ms": 640.0,
    "p90_ttft_ms": 1500.25,
    "p95_ttft_ms": 1800.0,
    "p99_ttft_ms": 2400.999,
    "mean_tpot_ms": 10.2,
    "median_tpot_ms": 10.0,
    "p99_tpot_ms": 14.5,
    "mean_itl_ms": 10.1,
    "median_itl_ms": 10.0,
    "p99_itl_ms": 0.004,
    "mean_e2el_ms": 1821.0,
    "median_e2el_ms": 1700.0,
    "p99_e2el_ms": 3900.0,
}


def render(renderable: object) -> str:
    console = Console(width=100, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("LLMSIZER_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_summary_golden() -> None:
    check_golden("summary.txt", render(summary_table(SUMMARY, num_gpus=4)))


def test_rows_golden() -> None:
    rows = [
        {"config": "H100 x1 TP1", "rate": 2.0, "num_gpus": 1, "p99_ttft_ms": 812.456, "ok": True},
        {"config": "H100 x2 TP2", "rate": 4.0, "num_gpus": 2, "p99_ttft_ms": 0.0123},
        {"config": "H200 x1 TP1", "rate": 3.5, "num_gpus": 1, "p99_ttft_ms": None, "ok": False},
    ]
    table = rows_table(rows, labels={"p99_ttft_ms": "P99 TTFT (ms)"}, title="Sweep")
    check_golden("rows.txt", render(table))


def test_per_gpu_lines_divide_the_totals() -> None:
    rows = {r.label: r.value for r in summary_rows(SUMMARY, num_gpus=4)}
    assert rows["Number of GPUs"] == "4"
    assert rows["Request throughput per GPU (req/s)"] == f"{2.3739 / 4:.2f}"
    assert "Number of GPUs" not in {r.label for r in summary_rows(SUMMARY)}
    with pytest.raises(ValueError, match="num_gpus"):
        summary_rows(SUMMARY, num_gpus=0)


def test_missing_keys_are_left_out() -> None:
    text = render(summary_table({"completed": 0, "failed": 0}))
    assert "Successful requests" in text
    assert "TTFT" not in text and "duration" not in text


def test_a_real_summary_has_every_section_in_order() -> None:
    summary = summarize(continuous(50, 4), slo=Slo(ttft_s=0.5))
    labels = [r.label for r in summary_rows(summary) if r.is_section]
    assert labels == [
        "Time to First Token",
        "Time per Output Token (excl. 1st token)",
        "Inter-token Latency",
        "End-to-end Latency",
        "Queueing Time (simulator)",
    ]
    values = {r.label: r.value for r in summary_rows(summary)}
    assert values["Request goodput (req/s)"] == f"{summary['request_goodput']:.2f}"
    assert values["P99 TTFT (ms)"] == f"{summary['p99_ttft_ms']:.2f}"
    assert "P50 TTFT (ms)" not in values  # the median says it


def test_print_summary() -> None:
    console = Console(width=100, record=True, color_system=None)
    print_summary(console, SUMMARY, title="Run 1")
    assert console.export_text().lstrip().startswith("Run 1")
