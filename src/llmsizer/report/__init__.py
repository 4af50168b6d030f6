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

from llmsizer.report.distributions import (
    distributions_figure,
    distributions_html,
    distributions_plotly,
    distributions_png,
    latency_histograms,
    latency_samples,
)
from llmsizer.report.html import html_report, write_html_report
from llmsizer.report.occupancy import Occupancy, QueueSize, assign_slots, occupancy, queue_size
from llmsizer.report.tables import print_summary, rows_table, summary_rows, summary_table
from llmsizer.report.timeline import DEFAULT_MAX_REQUESTS, Timeline, build_timeline
from llmsizer.report.timeline_interactive import timeline_html, timeline_plotly
from llmsizer.report.timeline_static import timeline_figure, timeline_png

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
