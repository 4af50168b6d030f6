"""`ImportedRun`: the records and parameters read from another tool's result file.

Every importer returns these, so calibration reads measurements the same way whichever tool
took them. Parameters use one vocabulary (`model_id`, `max_concurrency`, `request_rate`,
`burstiness`, `num_prompts`, `duration_s`); `raw_params` keeps the tool's own settings.
`approximations` says, in words, what the importer had to reconstruct.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmsizer.records import RequestRecord
from llmsizer.workload.lengths import MAX_TOKENS


@dataclass(frozen=True, slots=True)
class ImportedRun:
    """One run (one load point) of a benchmark tool, as `RequestRecord`s from time 0.

    `duration_s` is the tool's own measurement window when it reports one (pass it to
    `summarize` for the tool's throughput); `None` when it does not.
    """

    source: str  # "vllm", "aiperf", "guidellm" or "llmsizer"
    path: Path
    records: tuple[RequestRecord, ...]
    model_id: str | None = None
    max_concurrency: int | None = None
    request_rate: float | None = None  # req/s; None for a closed loop
    burstiness: float | None = None
    duration_s: float | None = None
    raw_params: Mapping[str, Any] = field(default_factory=dict)
    approximations: tuple[str, ...] = ()


def in_unit_s(value: float, unit: str) -> float:
    """A duration in seconds from a value and a unit name ("ns", "us", "ms", "s", "sec")."""
    scale = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0}
    if unit not in scale:
        raise ValueError(f"unknown time unit {unit!r}; expected one of {sorted(scale)}")
    return value * scale[unit]


def float_or_none(value: Any) -> float | None:
    """A float, or None for a missing value or vLLM's "inf" (no rate limit)."""
    if value is None or value == "inf":
        return None
    number = float(value)
    return None if number == float("inf") else number


def int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def token_count(value: Any) -> int:
    """A request's prompt or output length from a result file: an integer from 0 to
    `MAX_TOKENS` (a count past it is a corrupt file, and would allocate its token times)."""
    count = int(value)
    if not 0 <= count <= MAX_TOKENS:
        raise ValueError(f"a token count of {count}, not 0 to {MAX_TOKENS:,}")
    return count
