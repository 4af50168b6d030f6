"""The HTML report: one offline file with the parameters, summary, timeline, distributions."""

from __future__ import annotations

import re
from pathlib import Path

from llmsizer.metrics import summarize
from llmsizer.report import html_report, write_html_report
from llmsizer.report.html import flatten_parameters

from .conftest import static_batches

PARAMETERS = {"scenario": "notebook <static>", "engine": {"batching": "static", "max_num_seqs": 4}}


def test_report_is_self_contained(tmp_path: Path) -> None:
    records = static_batches()
    path = write_html_report(
        tmp_path / "report.html",
        title="Static batching <B=4>",
        parameters=PARAMETERS,
        summary=summarize(records, num_gpus=2),
        records=records,
        padded=True,
        max_num_seqs=4,
        num_gpus=2,
    )
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert text.count("* plotly.js v") == 1  # inlined once, shared by both figures
    assert not re.search(r"<script[^>]+src=", text)  # nothing loaded from elsewhere
    assert "<title>Static batching &lt;B=4&gt;</title>" in text
    assert "notebook &lt;static&gt;" in text  # caller text is escaped
    assert "engine.max_num_seqs" in text
    assert "Request throughput per GPU (req/s)" in text
    assert text.count('id="llmsizer-figure-') == 2
    assert "padding" in text


def test_report_is_deterministic() -> None:
    records = static_batches(8)
    kwargs = {"title": "t", "parameters": {}, "summary": summarize(records), "records": records}
    assert html_report(**kwargs) == html_report(**kwargs)  # type: ignore[arg-type]


def test_without_records_there_are_no_figures() -> None:
    text = html_report(title="t", parameters={}, summary={"completed": 0}, records=[])
    assert "plotly" not in text
    assert "No records" in text


def test_flatten_parameters() -> None:
    assert flatten_parameters({"a": 1, "b": {"c": None, "d": {"e": "x"}}}) == [
        ("a", "1"),
        ("b.c", "-"),
        ("b.d.e", "x"),
    ]
