"""Latency distributions: TTFT, TPOT, ITL and E2E histograms with p50 / p90 / p99 marked.

The samples follow `llmsizer.metrics` exactly (successful requests only; TPOT per request
with at least two output tokens; ITL every gap between consecutive tokens, pooled), so the
marked percentiles are the summary table's. Histograms are binned here with numpy and drawn
as bars, so a plot of millions of ITL gaps stays a few kilobytes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from plotly.subplots import make_subplots

from llmsizer.output import atomic_path
from llmsizer.records import RequestRecord
from llmsizer.report.style import PERCENTILE_STYLES, TimeUnit, time_unit

METRICS: tuple[tuple[str, str], ...] = (
    ("ttft", "Time to first token (TTFT)"),
    ("tpot", "Time per output token (TPOT)"),
    ("itl", "Inter-token latency (ITL)"),
    ("e2el", "End-to-end latency (E2E)"),
)
DEFAULT_BINS = 50
MAX_ITL_SAMPLES = 5_000_000  # 40 MB of gaps; beyond it ITL comes from every k-th request
DEFAULT_TITLE = "Latency distributions"
BAR_COLOUR = "#4e79a7"


@dataclass(frozen=True, slots=True, eq=False)
class Histogram:
    """Counts of one latency in `bins` equal bins from its minimum to its maximum (seconds),
    with its percentiles (`{50.0: seconds, ...}`, numpy's linear interpolation)."""

    edges_s: np.ndarray  # len(counts) + 1
    counts: np.ndarray
    percentiles_s: dict[float, float]
    num_samples: int
    note: str = ""  # how the samples were drawn, when not all were used

    @property
    def unit(self) -> TimeUnit:
        return time_unit(float(self.edges_s[-1]))


def latency_samples(
    records: Sequence[RequestRecord], *, itl_every: int = 1
) -> dict[str, np.ndarray]:
    """Per-metric samples in seconds, keyed `ttft`, `tpot`, `itl`, `e2el` (see module doc).

    `itl_every`: pool the ITL gaps of every k-th successful request only; all gaps of a
    million-request run would take gigabytes (`latency_histograms` picks k).
    """
    ok = [r for r in records if r.ok]
    n = len(ok)

    def column(values: Iterable[float]) -> np.ndarray:
        return np.fromiter(values, np.float64, count=n)

    arrival = column(r.arrival_s for r in ok)
    first = column(r.token_times_s[0] for r in ok)
    last = column(r.token_times_s[-1] for r in ok)
    finish = column(r.token_times_s[-1] if r.finish_s is None else r.finish_s for r in ok)
    num_out = column(r.num_output_tokens for r in ok)
    multi = num_out > 1
    return {
        "ttft": first - arrival,
        "tpot": (last[multi] - first[multi]) / (num_out[multi] - 1),
        "itl": _pooled_gaps([r.token_times_s for r in ok[::itl_every]]),
        "e2el": finish - arrival,
    }


def _pooled_gaps(times: list[np.ndarray]) -> np.ndarray:
    """Every gap between consecutive times within each array (each at least one long).

    All arrays end to end: array i owns flat[ends[i] - len_i : ends[i]], so the gaps of
    np.diff(flat) at ends[i] - 1 span two arrays and are dropped.
    """
    if not times:
        return np.zeros(0)
    flat = np.concatenate(times)
    ends = np.cumsum([t.shape[0] for t in times])
    return np.delete(np.diff(flat), ends[:-1] - 1)


def histogram(values_s: np.ndarray, *, bins: int = DEFAULT_BINS) -> Histogram | None:
    """The histogram of `values_s` (None when empty). Equal values get one narrow bin."""
    if values_s.size == 0:
        return None
    lo, hi = float(values_s.min()), float(values_s.max())
    if hi - lo <= 1e-9 * max(abs(hi), 1e-9):  # a fixed step cost: all equal up to rounding
        pad = max(abs(lo) * 0.01, 1e-9)
        lo, hi, bins = lo - pad, hi + pad, 1
    counts, edges = np.histogram(values_s, bins=bins, range=(lo, hi))
    ps = np.percentile(values_s, [p for p, _ in PERCENTILE_STYLES])
    return Histogram(
        edges_s=edges,
        counts=counts,
        percentiles_s={p: float(v) for (p, _), v in zip(PERCENTILE_STYLES, ps, strict=True)},
        num_samples=int(values_s.size),
    )


def latency_histograms(
    records: Sequence[RequestRecord],
    *,
    bins: int = DEFAULT_BINS,
    max_itl_samples: int = MAX_ITL_SAMPLES,
) -> dict[str, Histogram | None]:
    """`histogram` of each of `latency_samples(records)`, in the order of `METRICS`; ITL from
    every k-th request, the smallest k that keeps its samples under `max_itl_samples`
    (the histogram's `note` then says so)."""
    num_gaps = sum(r.num_output_tokens - 1 for r in records if r.ok)
    every = max(1, math.ceil(num_gaps / max_itl_samples))
    samples = latency_samples(records, itl_every=every)
    out = {key: histogram(samples[key], bins=bins) for key, _ in METRICS}
    itl = out["itl"]
    if every > 1 and itl is not None:
        out["itl"] = dataclasses.replace(itl, note=f"ITL of 1 in {every} requests")
    return out


def _samples_caption(hist: Histogram) -> str:
    return f"{hist.num_samples:,} samples" + (f", {hist.note}" if hist.note else "")


def _draw_histogram(ax: Axes, hist: Histogram | None, label: str) -> None:
    ax.set_title(label, fontsize=10)
    if hist is None:
        ax.text(0.5, 0.5, "no samples", transform=ax.transAxes, ha="center", color="#666666")
        ax.set_yticks([])
        return
    scale, unit = hist.unit.per_second, hist.unit.label
    edges = hist.edges_s * scale
    ax.stairs(hist.counts, edges, fill=True, color=BAR_COLOUR, alpha=0.8)
    for p, colour in PERCENTILE_STYLES:
        value = hist.percentiles_s[p] * scale
        ax.axvline(value, color=colour, lw=1.2, ls="--", label=f"p{p:g} = {value:.4g} {unit}")
    ax.set_xlabel(f"{unit}  ({_samples_caption(hist)})")
    ax.set_ylabel("count")
    ax.legend(fontsize=8, loc="upper right", framealpha=0.9)


def distributions_figure(
    histograms: dict[str, Histogram | None], *, title: str = DEFAULT_TITLE
) -> Figure:
    """A 2x2 matplotlib figure of the TTFT, TPOT, ITL and E2E histograms."""
    fig = Figure(figsize=(12, 7))
    FigureCanvasAgg(fig)
    # Fixed margins: a layout engine would double the drawing time.
    axes = fig.subplots(2, 2, gridspec_kw={"hspace": 0.4, "wspace": 0.22}).ravel()
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.08, top=0.9)
    for ax, (key, label) in zip(axes, METRICS, strict=True):
        _draw_histogram(ax, histograms.get(key), label)
    fig.suptitle(title)
    return fig


def distributions_plotly(
    histograms: dict[str, Histogram | None], *, title: str = DEFAULT_TITLE
) -> go.Figure:
    """A 2x2 plotly figure of the histograms; percentile lines are legend entries that can be
    switched on and off together."""
    fig = make_subplots(rows=2, cols=2, subplot_titles=[label for _, label in METRICS])
    for i, (key, _) in enumerate(METRICS):
        row, col = i // 2 + 1, i % 2 + 1
        hist = histograms.get(key)
        if hist is None:
            continue
        scale, unit = hist.unit.per_second, hist.unit.label
        edges = hist.edges_s * scale
        fig.add_trace(
            go.Bar(
                x=(edges[:-1] + edges[1:]) / 2,
                y=hist.counts,
                width=np.diff(edges),
                marker={"color": BAR_COLOUR},
                showlegend=False,
                hovertemplate=f"%{{x:.4g}} {unit}: %{{y}}<extra></extra>",
            ),
            row=row,
            col=col,
        )
        top = float(hist.counts.max())
        for p, colour in PERCENTILE_STYLES:
            value = hist.percentiles_s[p] * scale
            fig.add_trace(
                go.Scatter(
                    x=[value, value],
                    y=[0, top],
                    mode="lines",
                    line={"color": colour, "dash": "dash", "width": 1.5},
                    name=f"p{p:g}",
                    legendgroup=f"p{p:g}",
                    showlegend=i == 0,
                    hovertemplate=f"p{p:g} = {value:.4g} {unit}<extra></extra>",
                ),
                row=row,
                col=col,
            )
        fig.update_xaxes(title_text=f"{unit} ({_samples_caption(hist)})", row=row, col=col)
    fig.update_layout(title={"text": title}, height=650, bargap=0, plot_bgcolor="white")
    return fig


def distributions_png(
    records: Sequence[RequestRecord],
    path: Path | str,
    *,
    bins: int = DEFAULT_BINS,
    title: str = DEFAULT_TITLE,
    dpi: int = 100,
) -> Path:
    """Write the latency histograms of `records` as a PNG at `path` and return the path."""
    out = Path(path)
    fig = distributions_figure(latency_histograms(records, bins=bins), title=title)
    with atomic_path(out) as tmp:
        fig.savefig(tmp, format="png", dpi=dpi)
    return out


def distributions_html(
    records: Sequence[RequestRecord],
    path: Path | str,
    *,
    bins: int = DEFAULT_BINS,
    title: str = DEFAULT_TITLE,
) -> Path:
    """Write the interactive latency histograms of `records` as one self-contained HTML file
    (plotly.js inline) at `path` and return the path."""
    out = Path(path)
    fig = distributions_plotly(latency_histograms(records, bins=bins), title=title)
    with atomic_path(out) as tmp:
        fig.write_html(tmp, include_plotlyjs=True, full_html=True)
    return out
