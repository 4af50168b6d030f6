"""One self-contained HTML report of a run: title, parameters, summary table, the timeline
and the latency distributions.

Self-contained means it opens offline, years later: plotly.js is inlined once (with the
first figure; later figures reuse it), there is no CDN link, no external stylesheet and no
template engine. Text from the caller (title, parameter names and values) is escaped.
The report is deterministic: the same inputs give the same bytes (no timestamp; put one in
`parameters` if wanted).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path

import plotly.graph_objects as go

from llmsizer.output import write_atomic
from llmsizer.records import RequestRecord
from llmsizer.report.distributions import distributions_plotly, latency_histograms
from llmsizer.report.tables import summary_rows
from llmsizer.report.timeline import DEFAULT_MAX_REQUESTS, build_timeline
from llmsizer.report.timeline_interactive import timeline_plotly

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 0.9em; }
td, th { padding: 0.2em 0.8em; border-bottom: 1px solid #eee; text-align: left; }
td.value { text-align: right; font-variant-numeric: tabular-nums; }
tr.section th { padding-top: 0.8em; border-bottom: 1px solid #aaa; }
p.note { color: #666; }
"""


def flatten_parameters(parameters: Mapping[str, object], prefix: str = "") -> list[tuple[str, str]]:
    """`(dotted.name, value)` pairs of a possibly nested mapping, in its order."""
    out: list[tuple[str, str]] = []
    for key, value in parameters.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out += flatten_parameters(value, prefix=f"{name}.")
        else:
            out.append((name, "-" if value is None else str(value)))
    return out


def parameters_html(parameters: Mapping[str, object]) -> str:
    """A two-column HTML table of `parameters` (nested mappings as dotted names)."""
    rows = "".join(
        f"<tr><th>{html.escape(name)}</th><td>{html.escape(value)}</td></tr>"
        for name, value in flatten_parameters(parameters)
    )
    return f'<table class="parameters">{rows}</table>'


def summary_html(summary: Mapping[str, float], *, num_gpus: int | None = None) -> str:
    """The summary (the same lines as the terminal's `summary_table`) as an HTML table."""
    rows = []
    for row in summary_rows(summary, num_gpus=num_gpus):
        label = html.escape(row.label)
        if row.value is None:
            rows.append(f'<tr class="section"><th colspan="2">{label}</th></tr>')
        else:
            rows.append(f'<tr><td>{label}</td><td class="value">{html.escape(row.value)}</td></tr>')
    return f'<table class="summary">{"".join(rows)}</table>'


def _figures_html(figures: Sequence[go.Figure]) -> list[str]:
    """Each figure as a `<div>`, plotly.js inlined in the first one only."""
    return [
        fig.to_html(
            full_html=False,
            include_plotlyjs=(i == 0),
            div_id=f"llmsizer-figure-{i}",  # fixed ids keep the report deterministic
            config={"displaylogo": False},
        )
        for i, fig in enumerate(figures)
    ]


def html_report(
    *,
    title: str,
    parameters: Mapping[str, object],
    summary: Mapping[str, float],
    records: Sequence[RequestRecord],
    padded: bool = False,
    max_num_seqs: int | None = None,
    num_gpus: int | None = None,
    max_requests: int | None = DEFAULT_MAX_REQUESTS,
    window_s: tuple[float, float] | None = None,
) -> str:
    """The report as one HTML document (a string).

    `parameters`: what was run (scenario, engine, model...), shown as given. `summary`: a
    `summarize` result. `records`: drawn as the timeline (options as `build_timeline`) and
    the latency distributions; with no records the figures are left out and the report says
    so. `num_gpus` adds per-GPU throughput lines.
    """
    sections = [
        f"<h1>{html.escape(title)}</h1>",
        "<h2>Parameters</h2>",
        parameters_html(parameters) if parameters else '<p class="note">none given</p>',
        "<h2>Summary</h2>",
        summary_html(summary, num_gpus=num_gpus),
    ]
    if records:
        timeline = build_timeline(
            records,
            padded=padded,
            max_num_seqs=max_num_seqs,
            max_requests=max_requests,
            window_s=window_s,
        )
        figures = [
            timeline_plotly(timeline, title="Batch slots over time"),
            distributions_plotly(latency_histograms(records), title="Latency distributions"),
        ]
        timeline_div, distributions_div = _figures_html(figures)
        sections += ["<h2>Timeline</h2>", timeline_div]
        sections += ["<h2>Latency distributions</h2>", distributions_div]
    else:
        sections.append('<p class="note">No records: no timeline or distributions.</p>')
    body = "\n".join(sections)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n"
        f"<body>\n{body}\n"
        '<p class="note">Generated by llmsizer.</p>\n</body>\n</html>\n'
    )


def write_html_report(
    path: Path | str,
    *,
    title: str,
    parameters: Mapping[str, object],
    summary: Mapping[str, float],
    records: Sequence[RequestRecord],
    padded: bool = False,
    max_num_seqs: int | None = None,
    num_gpus: int | None = None,
    max_requests: int | None = DEFAULT_MAX_REQUESTS,
    window_s: tuple[float, float] | None = None,
) -> Path:
    """Write `html_report(...)` to `path` (UTF-8) and return the path."""
    out = Path(path)
    text = html_report(
        title=title,
        parameters=parameters,
        summary=summary,
        records=records,
        padded=padded,
        max_num_seqs=max_num_seqs,
        num_gpus=num_gpus,
        max_requests=max_requests,
        window_s=window_s,
    )
    write_atomic(out, text)
    return out
