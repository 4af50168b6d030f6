"""The course's timeline picture as data: slots over time, the queue, TTFT and E2E points.

The picture has three panels sharing one time axis (seconds on the run's clock):

1. batch slots: one row per slot, coloured prefill / decode / padding, idle elsewhere;
2. queue size: requests that arrived and were not yet scheduled;
3. latency points: each request's TTFT at the moment its first token came, and its E2E
   latency at the moment it finished (as the course's notebook records them).

A big run does not fit in one picture, and 100,000 rectangles would be slow and unreadable:
the picture shows the first `max_requests` requests to take a slot (default
`DEFAULT_MAX_REQUESTS`) up to the moment the next one took its slot, or an explicit time
window. What is left out is said on the figure (`Timeline.notes`). Renderers:
`timeline_static` (matplotlib PNG) and `timeline_interactive` (plotly HTML).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from llmsizer.records import RequestRecord
from llmsizer.report.occupancy import (
    Occupancy,
    QueueSize,
    RequestColumns,
    occupancy,
    queue_size,
)
from llmsizer.report.style import TimeUnit, format_seconds, time_unit

DEFAULT_MAX_REQUESTS = 2000
DEFAULT_TITLE = "Batch slots over time"
Phase = Literal["prefill", "decode", "padding"]
PHASES: tuple[Phase, ...] = ("prefill", "decode", "padding")


@dataclass(frozen=True, slots=True, eq=False)
class Segments:
    """Rectangles of one phase, clipped to the window: row `slot`, from `start_s` to `end_s`."""

    slot: np.ndarray
    start_s: np.ndarray
    end_s: np.ndarray
    request_id: np.ndarray

    def __len__(self) -> int:
        return int(self.slot.shape[0])


@dataclass(frozen=True, slots=True, eq=False)
class Timeline:
    """What one timeline picture shows over `[t0_s, t1_s]` (seconds on the run's clock)."""

    occupancy: Occupancy
    queue: QueueSize | None  # None for measured records: a client cannot see the queue
    t0_s: float
    t1_s: float
    ttft_at_s: np.ndarray  # first-token time of each successful request in the window
    ttft_s: np.ndarray
    e2el_at_s: np.ndarray  # finish time of each successful request in the window
    e2el_s: np.ndarray
    num_requests: int  # records in the whole run
    notes: tuple[str, ...]  # what the picture leaves out or assumes, printed on it

    @property
    def unit(self) -> TimeUnit:
        """The unit of the time axis, by the window's span."""
        return time_unit(self.t1_s - self.t0_s)

    @property
    def latency_unit(self) -> TimeUnit:
        """The unit of the latency axis, by the largest latency shown."""
        largest = max((float(a.max()) for a in (self.ttft_s, self.e2el_s) if a.size), default=0)
        return time_unit(largest)

    def segments(self, phase: Phase) -> Segments:
        """The `phase` part of every slot interval, clipped to the window, empty ones dropped."""
        occ = self.occupancy
        bounds = {
            "prefill": (occ.start_s, occ.first_token_s),
            "decode": (occ.first_token_s, occ.finish_s),
            "padding": (occ.finish_s, occ.release_s),
        }
        lo, hi = bounds[phase]
        lo = np.maximum(lo, self.t0_s)
        hi = np.minimum(hi, self.t1_s)
        shown = hi > lo
        return Segments(occ.slot[shown], lo[shown], hi[shown], occ.request_id[shown])


def build_timeline(
    records: Sequence[RequestRecord],
    *,
    padded: bool = False,
    max_num_seqs: int | None = None,
    max_requests: int | None = DEFAULT_MAX_REQUESTS,
    window_s: tuple[float, float] | None = None,
) -> Timeline:
    """The timeline of `records`.

    `padded`: static or dynamic batching (slots held to the end of the batch; needs
    `scheduled_s`). `max_num_seqs`: rows to draw (the engine's batch size). `window_s`:
    `(start, end)` in seconds to show; without it, the first `max_requests` requests to take
    a slot (None: all). Records without `scheduled_s` (measured) are drawn from arrival.
    """
    cols = RequestColumns.from_records(records)
    if window_s is not None:
        t0_s, t1_s = window_s
        if not t1_s > t0_s:
            raise ValueError(f"window_s must be (start, end) with end > start, got {window_s}")
        occ = occupancy(cols, padded=padded, max_num_seqs=max_num_seqs, started_before_s=t1_s)
    else:
        occ = occupancy(cols, padded=padded, max_num_seqs=max_num_seqs, max_requests=max_requests)
        t0_s, t1_s = _default_window(cols, occ)
    ttft_at, ttft = _points(cols.ok, cols.first_token_s, cols.arrival_s, t0_s, t1_s)
    e2el_at, e2el = _points(cols.ok, cols.finish_s, cols.arrival_s, t0_s, t1_s)
    return Timeline(
        occupancy=occ,
        queue=None if cols.measured else queue_size(cols.arrival_s, cols.scheduled_s),
        t0_s=t0_s,
        t1_s=t1_s,
        ttft_at_s=ttft_at,
        ttft_s=ttft,
        e2el_at_s=e2el_at,
        e2el_s=e2el,
        num_requests=len(records),
        notes=_notes(occ, max_num_seqs, window_s, t0_s, t1_s),
    )


def _default_window(cols: RequestColumns, occ: Occupancy) -> tuple[float, float]:
    """From the first arrival to the moment the first request left out took its slot, or to
    the last release when none was left out."""
    if cols.arrival_s.size == 0:
        return 0.0, 1.0
    t0_s = float(np.nanmin(cols.arrival_s))
    last_s = max(float(np.nanmax(cols.arrival_s)), float(occ.release_s.max(initial=t0_s)))
    t1_s = occ.complete_until_s if t0_s < occ.complete_until_s < last_s else last_s
    return t0_s, t1_s if t1_s > t0_s else t0_s + 1.0


def _points(
    ok: np.ndarray, at_s: np.ndarray, arrival_s: np.ndarray, t0_s: float, t1_s: float
) -> tuple[np.ndarray, np.ndarray]:
    shown = ok & (at_s >= t0_s) & (at_s <= t1_s)
    return at_s[shown], at_s[shown] - arrival_s[shown]


def _notes(
    occ: Occupancy,
    max_num_seqs: int | None,
    window_s: tuple[float, float] | None,
    t0_s: float,
    t1_s: float,
) -> tuple[str, ...]:
    notes = []
    if window_s is not None:
        notes.append(f"window {format_seconds(t0_s)} to {format_seconds(t1_s)}")
    elif np.isfinite(occ.complete_until_s):
        notes.append(
            f"showing the first {occ.num_requests:,} requests to take a slot "
            f"(to t = {format_seconds(t1_s)}); pass max_requests or window_s for more"
        )
    if occ.from_arrival:
        notes.append(
            "no scheduled_s (measured run): rows are requests in flight from arrival; "
            "queue not observed"
        )
    if occ.num_extra_rows:
        notes.append(
            f"{occ.num_extra_rows} rows beyond max_num_seqs={max_num_seqs}: preempted "
            "requests are drawn from their first scheduling to their finish"
        )
    return tuple(notes)
