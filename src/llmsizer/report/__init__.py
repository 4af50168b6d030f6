"""Reports of a run: tables, pictures and a self-contained HTML page.

Reads only `llmsizer.records` and `llmsizer.metrics` (never the simulator, the performance
model or the benchmark client), so simulated and measured runs render the same way.

- `summary_table`, `print_summary`, `rows_table`: rich tables (vLLM's summary layout).
- `timeline_png`, `timeline_html`: the course's picture of batch slots over time, the queue,
  and TTFT / E2E points; `build_timeline` gives its data, `timeline_figure` /
  `timeline_plotly` the figures.
- `distributions_png`, `distributions_html`: TTFT, TPOT, ITL, E2E histograms with p50/p90/p99.
- `write_html_report`, `html_report`: everything above in one offline HTML file.
"""

from typing import Any

from llmsizer.errors import import_extra
from llmsizer.report.occupancy import Occupancy, QueueSize, assign_slots, occupancy, queue_size
from llmsizer.report.tables import print_summary, rows_table, summary_rows, summary_table
from llmsizer.report.timeline import DEFAULT_MAX_REQUESTS, Timeline, build_timeline

# The picture makers load matplotlib and plotly (~1 s; the extra `llmsizer[plots]`): imported
# on first use only, so a command that draws nothing never pays for them, and an install
# without the extra gets an error naming it.
_LAZY = {
    "distributions_figure": "distributions",
    "distributions_html": "distributions",
    "distributions_plotly": "distributions",
    "distributions_png": "distributions",
    "latency_histograms": "distributions",
    "latency_samples": "distributions",
    "html_report": "html",
    "write_html_report": "html",
    "timeline_html": "timeline_interactive",
    "timeline_plotly": "timeline_interactive",
    "timeline_figure": "timeline_static",
    "timeline_png": "timeline_static",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'llmsizer.report' has no attribute {name!r}")
    module = import_extra(f"llmsizer.report.{_LAZY[name]}", "plots", f"drawing ({name})")
    return getattr(module, name)


__all__ = [
    "DEFAULT_MAX_REQUESTS",
    "Occupancy",
    "QueueSize",
    "Timeline",
    "assign_slots",
    "build_timeline",
    "distributions_figure",
    "distributions_html",
    "distributions_plotly",
    "distributions_png",
    "html_report",
    "latency_histograms",
    "latency_samples",
    "occupancy",
    "print_summary",
    "queue_size",
    "rows_table",
    "summary_rows",
    "summary_table",
    "timeline_figure",
    "timeline_html",
    "timeline_plotly",
    "timeline_png",
    "write_html_report",
]
