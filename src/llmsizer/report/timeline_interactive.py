"""The timeline as an interactive plotly figure and self-contained HTML.

Each phase is one horizontal bar trace (bars with a `base`), not one shape per rectangle, so
thousands of requests stay light; hovering a bar names the request and its times. The HTML
file carries plotly.js inline: it opens offline.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from llmsizer.output import atomic_path
from llmsizer.records import RequestRecord
from llmsizer.report.style import (
    E2E_COLOUR,
    IDLE_COLOUR,
    PHASE_COLOURS,
    QUEUE_COLOUR,
    TTFT_COLOUR,
    row_height,
)
from llmsizer.report.timeline import (
    DEFAULT_MAX_REQUESTS,
    DEFAULT_TITLE,
    PHASES,
    Timeline,
    build_timeline,
)


def _slot_traces(tl: Timeline) -> list[go.Bar]:
    unit = tl.unit
    rows = np.arange(tl.occupancy.num_rows)
    height = row_height(tl.occupancy.num_rows)
    span = (tl.t1_s - tl.t0_s) * unit.per_second
    traces = [
        go.Bar(
            name="idle",
            orientation="h",
            y=rows + 1,
            x=np.full(rows.size, span),
            base=np.full(rows.size, tl.t0_s * unit.per_second),
            marker={"color": IDLE_COLOUR},
            width=height,
            hoverinfo="skip",
        )
    ]
    for phase in PHASES:
        seg = tl.segments(phase)
        if phase == "padding" and not tl.occupancy.padded:
            continue
        start = seg.start_s * unit.per_second
        length = (seg.end_s - seg.start_s) * unit.per_second
        traces.append(
            go.Bar(
                name=phase,
                orientation="h",
                y=seg.slot + 1,
                x=length,
                base=start,
                width=height,
                marker={"color": PHASE_COLOURS[phase], "line": {"width": 0}},
                customdata=np.stack((seg.request_id, start, start + length), axis=1),
                hovertemplate=(
                    f"request %{{customdata[0]}}<br>{phase} %{{customdata[1]:.4g}}"
                    f" to %{{customdata[2]:.4g}} {unit.label}<extra></extra>"
                ),
            )
        )
    return traces


def _queue_trace(tl: Timeline) -> go.Scatter | None:
    if tl.queue is None:
        return None
    x, y = tl.queue.between(tl.t0_s, tl.t1_s)
    return go.Scatter(
        name="queue size",
        x=x * tl.unit.per_second,
        y=y,
        mode="lines",
        line={"shape": "hv", "color": QUEUE_COLOUR, "width": 1.5},
    )


def _latency_traces(tl: Timeline) -> list[go.Scatter]:
    x_scale, y_unit = tl.unit.per_second, tl.latency_unit
    return [
        go.Scatter(
            name=label,
            x=at * x_scale,
            y=value * y_unit.per_second,
            mode="markers",
            marker={"color": colour, "size": 5},
            hovertemplate=f"%{{y:.4g}} {y_unit.label} at %{{x:.4g}}<extra>{label}</extra>",
        )
        for at, value, colour, label in (
            (tl.e2el_at_s, tl.e2el_s, E2E_COLOUR, "E2E latency"),
            (tl.ttft_at_s, tl.ttft_s, TTFT_COLOUR, "TTFT"),
        )
    ]


def timeline_plotly(tl: Timeline, *, title: str = DEFAULT_TITLE) -> go.Figure:
    """A three-panel plotly figure of `tl` (slots, queue size, latencies) on one time axis."""
    slot_px = int(np.clip(22 * tl.occupancy.num_rows, 160, 600))
    fig = make_subplots(
        rows=3,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.04,
        row_heights=[slot_px, 130, 180],
    )
    for trace in _slot_traces(tl):
        fig.add_trace(trace, row=1, col=1)
    queue = _queue_trace(tl)
    if queue is not None:
        fig.add_trace(queue, row=2, col=1)
    for trace in _latency_traces(tl):
        fig.add_trace(trace, row=3, col=1)
    unit = tl.unit
    subtitle = "".join(f"<br><sup>{html.escape(note)}</sup>" for note in tl.notes)
    fig.update_layout(
        title={"text": title + subtitle},
        barmode="overlay",
        bargap=0,
        height=slot_px + 130 + 180 + 160,
        plot_bgcolor="white",
        margin={"t": 70 + 18 * len(tl.notes)},
        legend={"tracegroupgap": 4},
    )
    fig.update_yaxes(title_text="batch slot", autorange="reversed", row=1, col=1, showgrid=False)
    queue_title = "queue size" if tl.queue is not None else "queue not observed"
    fig.update_yaxes(title_text=queue_title, rangemode="tozero", row=2, col=1)
    fig.update_yaxes(
        title_text=f"latency ({tl.latency_unit.label})", rangemode="tozero", row=3, col=1
    )
    fig.update_xaxes(range=[tl.t0_s * unit.per_second, tl.t1_s * unit.per_second])
    fig.update_xaxes(title_text=f"time ({unit.label})", row=3, col=1)
    return fig


def timeline_html(
    records: Sequence[RequestRecord],
    path: Path | str,
    *,
    padded: bool = False,
    max_num_seqs: int | None = None,
    max_requests: int | None = DEFAULT_MAX_REQUESTS,
    window_s: tuple[float, float] | None = None,
    title: str = DEFAULT_TITLE,
) -> Path:
    """Write the interactive timeline of `records` as one self-contained HTML file (plotly.js
    inline, no network needed) at `path`, and return the path. Options as `timeline_png`."""
    tl = build_timeline(
        records,
        padded=padded,
        max_num_seqs=max_num_seqs,
        max_requests=max_requests,
        window_s=window_s,
    )
    out = Path(path)
    with atomic_path(out) as tmp:
        timeline_plotly(tl, title=title).write_html(tmp, include_plotlyjs=True, full_html=True)
    return out
