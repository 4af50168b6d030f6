"""Tables: a run's summary in the shape of `vllm bench serve`'s final printout, and rows of
a sweep or comparison side by side.

`summary_rows` is the one place that decides which lines a summary shows, in which order and
with which labels; `summary_table` (rich, for the terminal) and the HTML report both render
it. Keys are those of `llmsizer.metrics.summarize`; a key the summary lacks is left out, so
a summary of zero requests or of a measured run (no queueing time) still renders.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

DEFAULT_SUMMARY_TITLE = "Serving Benchmark Result"

# (metric key, section title, short name in the row labels), in vLLM's order.
LATENCY_SECTIONS: tuple[tuple[str, str, str], ...] = (
    ("ttft", "Time to First Token", "TTFT"),
    ("tpot", "Time per Output Token (excl. 1st token)", "TPOT"),
    ("itl", "Inter-token Latency", "ITL"),
    ("e2el", "End-to-end Latency", "E2EL"),
    ("queue", "Queueing Time (simulator)", "queue"),
)
_COUNTS: tuple[tuple[str, str], ...] = (
    ("completed", "Successful requests"),
    ("failed", "Failed requests"),
)
_RUN: tuple[tuple[str, str], ...] = (
    ("duration_s", "Benchmark duration (s)"),
    ("total_input_tokens", "Total input tokens"),
    ("total_output_tokens", "Total generated tokens"),
    ("request_throughput", "Request throughput (req/s)"),
    ("request_goodput", "Request goodput (req/s)"),
    ("output_throughput", "Output token throughput (tok/s)"),
    ("total_token_throughput", "Total Token throughput (tok/s)"),
)
_PER_GPU: tuple[tuple[str, str], ...] = (
    ("request_throughput", "Request throughput per GPU (req/s)"),
    ("request_goodput", "Request goodput per GPU (req/s)"),
    ("output_throughput", "Output token throughput per GPU (tok/s)"),
    ("total_token_throughput", "Total Token throughput per GPU (tok/s)"),
)
_INTEGER_KEYS = frozenset({"completed", "failed", "total_input_tokens", "total_output_tokens"})


@dataclass(frozen=True, slots=True)
class SummaryRow:
    """One line of a summary: a label and its formatted value, or a section heading
    (`value is None`)."""

    label: str
    value: str | None = None

    @property
    def is_section(self) -> bool:
        return self.value is None


def _percentiles_of(summary: Mapping[str, float], metric: str) -> list[str]:
    """The percentile fragments ('p90', 'p99.9') that `summary` has for `metric`, ascending;
    p50 is left out, it is the median."""
    found = (re.fullmatch(rf"p([0-9.]+)_{metric}_ms", key) for key in summary)
    kept = (m.group(1) for m in found if m and float(m.group(1)) != 50.0)
    return [f"p{p}" for p in sorted(kept, key=float)]


def summary_rows(summary: Mapping[str, float], *, num_gpus: int | None = None) -> list[SummaryRow]:
    """The lines of a summary, in `vllm bench serve`'s order: counts, duration and throughput
    (and per-GPU throughput when `num_gpus` is given: the totals divided by it), then for each
    latency a section with its mean, median and every percentile present, in ms. Counts are
    integers; every other value has two decimals, as vLLM prints them."""
    rows = [SummaryRow(label, format_value(summary[k], k)) for k, label in _COUNTS if k in summary]
    rows += [SummaryRow(label, format_value(summary[k], k)) for k, label in _RUN if k in summary]
    if num_gpus is not None:
        if num_gpus < 1:
            raise ValueError(f"num_gpus must be >= 1, got {num_gpus}")
        rows.append(SummaryRow("Number of GPUs", str(num_gpus)))
        rows += [
            SummaryRow(label, format_value(summary[k] / num_gpus, k))
            for k, label in _PER_GPU
            if k in summary
        ]
    for metric, section, short in LATENCY_SECTIONS:
        stats = [("mean", "Mean"), ("median", "Median")]
        stats += [(p, p.upper()) for p in _percentiles_of(summary, metric)]
        lines = [
            SummaryRow(f"{name} {short} (ms)", format_value(summary[f"{stat}_{metric}_ms"]))
            for stat, name in stats
            if f"{stat}_{metric}_ms" in summary
        ]
        if lines:
            rows += [SummaryRow(section), *lines]
    return rows


def format_value(value: object, key: str | None = None) -> str:
    """A table cell: '-' for None, integers and integer `key`s as integers, floats with two
    decimals (three significant digits below 0.01, so small values don't read as zero)."""
    if value is None:
        return "-"
    if isinstance(value, bool | str):
        return str(value)
    if isinstance(value, int) or (key in _INTEGER_KEYS and isinstance(value, float)):
        return f"{int(value)}"
    if isinstance(value, float):
        if value != value:  # NaN
            return "nan"
        return f"{value:.2f}" if value == 0 or abs(value) >= 0.01 else f"{value:.3g}"
    return str(value)


def summary_table(
    summary: Mapping[str, float],
    *,
    title: str = DEFAULT_SUMMARY_TITLE,
    num_gpus: int | None = None,
) -> Table:
    """A two-column rich table (metric, value) of a `summarize` result, sections separated by
    rules and headed in bold."""
    table = Table(title=title, title_style="bold")
    table.add_column("Metric", no_wrap=True)
    table.add_column("Value", justify="right", no_wrap=True)
    for row in summary_rows(summary, num_gpus=num_gpus):
        if row.value is None:
            table.add_section()
            table.add_row(row.label, "", style="bold")
        else:
            table.add_row(row.label, row.value)
    return table


def print_summary(
    console: Console,
    summary: Mapping[str, float],
    *,
    title: str = DEFAULT_SUMMARY_TITLE,
    num_gpus: int | None = None,
) -> None:
    """Print `summary_table(summary)` on `console`."""
    console.print(summary_table(summary, title=title, num_gpus=num_gpus))


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def rows_table(
    rows: Sequence[Mapping[str, object]],
    *,
    columns: Sequence[str] | None = None,
    labels: Mapping[str, str] | None = None,
    title: str | None = None,
) -> Table:
    """A rich table with one line per row (a sweep's points, compared configurations).

    `columns`: the keys to show, in order (default: every key, in order of first appearance).
    `labels`: column headers by key (default: the key). A row without a key shows '-'.
    Columns whose values are all numbers are right-aligned.
    """
    keys = list(columns) if columns is not None else list(dict.fromkeys(k for r in rows for k in r))
    table = Table(title=title, title_style="bold")
    for key in keys:
        values = [r[key] for r in rows if r.get(key) is not None]
        numeric = bool(values) and all(_is_number(v) for v in values)
        header = (labels or {}).get(key, key)
        table.add_column(header, justify="right" if numeric else "left", no_wrap=numeric)
    for r in rows:
        table.add_row(*(format_value(r.get(key), key) for key in keys))
    return table
