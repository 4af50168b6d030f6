"""How the pictures look: the phase colours and the time unit a span is shown in.

Colours follow the course's timeline (and TensorRT-LLM's in-flight batching figure): prefill
("context") and decode ("generation") in two strong colours, padding ("no-op") grey, idle
slots a pale background. TTFT points are purple as in the course video.
"""

from __future__ import annotations

from dataclasses import dataclass

PREFILL_COLOUR = "#f28e2b"
DECODE_COLOUR = "#4e79a7"
PADDING_COLOUR = "#9c9c9c"
IDLE_COLOUR = "#f1f1f1"
QUEUE_COLOUR = "#333333"
TTFT_COLOUR = "#8e44ad"
E2E_COLOUR = "#2ca02c"
PHASE_COLOURS = {
    "prefill": PREFILL_COLOUR,
    "decode": DECODE_COLOUR,
    "padding": PADDING_COLOUR,
}
PERCENTILE_STYLES: tuple[tuple[float, str], ...] = (
    (50.0, "#2ca02c"),
    (90.0, "#ff7f0e"),
    (99.0, "#d62728"),
)


def row_height(num_rows: int) -> float:
    """A slot bar's height as a fraction of the row pitch: gaps keep a few slots apart, but
    with many rows they alias into stripes, so bars then fill the row."""
    return 0.8 if num_rows <= 32 else 1.0


@dataclass(frozen=True, slots=True)
class TimeUnit:
    """A display unit for times: `value_in_unit = seconds * per_second`."""

    label: str
    per_second: float


SECONDS = TimeUnit("s", 1.0)
MILLISECONDS = TimeUnit("ms", 1e3)


def time_unit(span_s: float) -> TimeUnit:
    """Milliseconds for spans under one second, seconds otherwise (so axes read 0-999 or 0.0-N)."""
    return MILLISECONDS if span_s < 1.0 else SECONDS


def format_seconds(t_s: float) -> str:
    """A time for a caption, in the unit `time_unit` picks for it: '250 ms', '12.5 s'."""
    unit = time_unit(abs(t_s))
    return f"{t_s * unit.per_second:.4g} {unit.label}"
