"""The timeline as a matplotlib figure and PNG.

Uses `matplotlib.figure.Figure` with the Agg canvas directly, never pyplot: nothing global
(backend, current figure, rc settings) is touched, no window opens, and figures are freed
when they go out of scope. Rectangles are drawn as one `PolyCollection` per phase, so a
picture of thousands of requests renders in well under a second.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

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


def _rectangles(
    slot: np.ndarray, x0: np.ndarray, x1: np.ndarray, x_scale: float, height: float
) -> list[np.ndarray]:
    """Vertices (4 x 2 each) of the rectangles `[x0, x1] * x_scale` by `slot +- height / 2`."""
    y0 = slot - height / 2
    y1 = slot + height / 2
    xs = np.stack((x0, x1, x1, x0), axis=1) * x_scale
    ys = np.stack((y0, y0, y1, y1), axis=1)
    return list(np.stack((xs, ys), axis=2))


def _draw_slots(ax: Axes, tl: Timeline) -> None:
    scale, num_rows = tl.unit.per_second, tl.occupancy.num_rows
    height = row_height(num_rows)
    rows = np.arange(num_rows, dtype=np.float64)
    t0, t1 = np.full_like(rows, tl.t0_s), np.full_like(rows, tl.t1_s)
    idle = _rectangles(rows, t0, t1, scale, height)
    ax.add_collection(PolyCollection(idle, facecolors=IDLE_COLOUR, linewidths=0))
    for phase in PHASES:
        seg = tl.segments(phase)
        if len(seg):
            verts = _rectangles(seg.slot.astype(np.float64), seg.start_s, seg.end_s, scale, height)
            ax.add_collection(
                PolyCollection(
                    verts, facecolors=PHASE_COLOURS[phase], linewidths=0, antialiased=False
                )
            )
    ax.set_ylim(max(num_rows, 1) - 0.5, -0.5)  # slot 1 on top, as in the course
    ax.yaxis.set_major_locator(MaxNLocator(nbins=min(max(num_rows, 1), 10), integer=True))
    ax.yaxis.set_major_formatter(lambda y, _pos: f"{int(y) + 1}")
    ax.set_ylabel("batch slot")
    handles = [Patch(color=PHASE_COLOURS[p], label=p) for p in PHASES if p != "padding"]
    if tl.occupancy.padded:
        handles.append(Patch(color=PHASE_COLOURS["padding"], label="padding"))
    handles.append(Patch(facecolor=IDLE_COLOUR, edgecolor="#cccccc", label="idle"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)


def _draw_queue(ax: Axes, tl: Timeline) -> None:
    ax.set_ylabel("queue size")
    if tl.queue is None:
        ax.text(
            0.5,
            0.5,
            "queue not observed (records have no scheduled_s)",
            transform=ax.transAxes,
            ha="center",
            va="center",
            color="#666666",
        )
        ax.set_yticks([])
        return
    x, y = tl.queue.between(tl.t0_s, tl.t1_s)
    ax.plot(x * tl.unit.per_second, y, drawstyle="steps-post", color=QUEUE_COLOUR, lw=1.2)
    ax.set_ylim(bottom=0, top=max(1.0, float(y.max()) * 1.1))
    ax.yaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))


def _draw_latencies(ax: Axes, tl: Timeline) -> None:
    x_scale, y_unit = tl.unit.per_second, tl.latency_unit
    many = tl.ttft_s.size > 500
    size = 4 if many else 14
    for at, value, colour, label in (
        (tl.e2el_at_s, tl.e2el_s, E2E_COLOUR, "E2E latency (at finish)"),
        (tl.ttft_at_s, tl.ttft_s, TTFT_COLOUR, "TTFT (at first token)"),
    ):
        ax.scatter(
            at * x_scale,
            value * y_unit.per_second,
            s=size,
            color=colour,
            label=label,
            linewidths=0,
            rasterized=many,
            clip_on=False,  # a point at the window's edge shows whole
        )
    ax.set_ylabel(f"latency ({y_unit.label})")
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)


def timeline_figure(tl: Timeline, *, title: str = DEFAULT_TITLE) -> Figure:
    """A three-panel matplotlib figure of `tl` (slots, queue size, latencies), 12 inches wide;
    the slot panel grows with the number of rows (up to 6 inches)."""
    slot_h = float(np.clip(0.3 * tl.occupancy.num_rows, 1.5, 6.0))
    top_in = 0.5 + 0.15 * len(tl.notes)  # the title, then one line per note
    height_in = top_in + slot_h + 1.3 + 1.8 + 2 * 0.25 + 0.6
    fig = Figure(figsize=(12, height_in))
    FigureCanvasAgg(fig)
    # Fixed margins in inches (legends sit right of the panels): a layout engine would
    # double the drawing time.
    slots, queue, lat = fig.subplots(
        3,
        1,
        sharex=True,
        gridspec_kw={"height_ratios": [slot_h, 1.3, 1.8], "hspace": 0.25 / ((slot_h + 3.1) / 3)},
    )
    fig.subplots_adjust(left=0.07, right=0.83, bottom=0.6 / height_in, top=1 - top_in / height_in)
    _draw_slots(slots, tl)
    _draw_queue(queue, tl)
    _draw_latencies(lat, tl)
    unit = tl.unit
    lat.set_xlim(tl.t0_s * unit.per_second, tl.t1_s * unit.per_second)
    lat.set_xlabel(f"time ({unit.label})")
    fig.suptitle(title, y=1 - 0.1 / height_in, va="top")
    if tl.notes:
        slots.set_title("\n".join(tl.notes), fontsize=8, color="#555555", loc="left")
    return fig


def timeline_png(
    records: Sequence[RequestRecord],
    path: Path | str,
    *,
    padded: bool = False,
    max_num_seqs: int | None = None,
    max_requests: int | None = DEFAULT_MAX_REQUESTS,
    window_s: tuple[float, float] | None = None,
    title: str = DEFAULT_TITLE,
    dpi: int = 100,
) -> Path:
    """Write the timeline of `records` as a PNG at `path` and return the path.

    Options as in `build_timeline`: `padded` for static/dynamic batching, `max_num_seqs` rows,
    the first `max_requests` requests or the `window_s` (start, end) seconds.
    """
    tl = build_timeline(
        records,
        padded=padded,
        max_num_seqs=max_num_seqs,
        max_requests=max_requests,
        window_s=window_s,
    )
    out = Path(path)
    with atomic_path(out) as tmp:
        timeline_figure(tl, title=title).savefig(tmp, format="png", dpi=dpi)
    return out
