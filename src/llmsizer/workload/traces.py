"""Trace files: real arrival times and lengths to replay.

Two formats (see `../shared/traces/README.md` for the public files):

- Azure LLM inference CSV (read by inference-perf): the header
  `TIMESTAMP,ContextTokens,GeneratedTokens`, then rows such as
  `2023-11-16 18:15:46.6805900,374,44` (wall-clock time, up to 9 fractional digits).
- Mooncake JSONL (read by vLLM's benchmark, AIPerf, guidellm): one JSON object a line with
  `timestamp` (milliseconds), `input_length`, `output_length` and, optionally, `hash_ids`:
  ids of the prompt's 512-token blocks, equal ids meaning an identical prefix. Other keys are
  ignored.

Rows must be in time order. Arrival times are shifted so that the first request arrives at
t = 0. Any problem raises `TraceError` (a `ValueError`) naming the file, the line and what
was expected.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Literal

import numpy as np

from llmsizer.units import MS
from llmsizer.workload.core import Workload, read_only
from llmsizer.workload.lengths import MAX_TOKENS

TraceFormat = Literal["azure", "mooncake"]
AZURE_HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens"
MOONCAKE_BLOCK_TOKENS = 512  # tokens per hash_ids block (Mooncake FAST'25 trace README)
NS = 1e-9  # seconds per nanosecond

_AZURE_ROW = re.compile(
    r"\s*(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d{1,9})?)\s*,\s*(\d+)\s*,\s*(\d+)\s*"
)
_AZURE_EXPECTED = "expected 'YYYY-MM-DD HH:MM:SS.fffffff,<ContextTokens>,<GeneratedTokens>'"
_MOONCAKE_EXPECTED = (
    "expected a JSON object with timestamp (ms), input_length, output_length "
    "and optionally hash_ids"
)


class TraceError(ValueError):
    """A trace file that cannot be read; the message names the file, the line and the problem."""

    def __init__(self, path: str | Path, line: int | None, problem: str) -> None:
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {problem}")
        self.path = Path(path)
        self.line = line


def read_trace(
    path: str | Path,
    trace_format: TraceFormat | Literal["auto"] = "auto",
    *,
    time_scale: float = 1.0,
    rate_scale: float = 1.0,
    max_requests: int | None = None,
) -> Workload:
    """The trace at `path` as a workload starting at t = 0.

    `max_requests` keeps the first N requests. `time_scale` multiplies every inter-arrival gap
    (10 replays ten times more slowly, as `llmsizer bench --time-scale 10`); `rate_scale`
    multiplies the request rate instead (2 replays twice as fast). They compose: the gaps are
    multiplied by `time_scale / rate_scale`.
    """
    for name, scale in (("time_scale", time_scale), ("rate_scale", rate_scale)):
        if not (math.isfinite(scale) and scale > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {scale}")
    if trace_format == "auto":
        trace_format = detect_trace_format(path)
    read = read_azure_csv if trace_format == "azure" else read_mooncake_jsonl
    workload = read(path)
    if max_requests is not None:
        workload = workload.head(max_requests)
    return workload.with_time_scale(time_scale / rate_scale)


def detect_trace_format(path: str | Path) -> TraceFormat:
    """`azure` for a `.csv` file, `mooncake` for a `.jsonl` file."""
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return "azure"
    if suffix == ".jsonl":
        return "mooncake"
    raise TraceError(
        path,
        None,
        f"cannot tell the trace format from the suffix {suffix!r}: expected .csv (azure) "
        "or .jsonl (mooncake), or name the format",
    )


AZURE_NAMES = ("ContextTokens", "GeneratedTokens")


def read_azure_csv(path: str | Path) -> Workload:
    """An Azure LLM inference trace (CSV): arrival times and prompt and output lengths."""
    lines = _read_lines(path)
    header = lines[0].lstrip("\ufeff").replace(" ", "") if lines else ""
    if header != AZURE_HEADER:
        raise TraceError(path, 1, f"expected the header {AZURE_HEADER!r}, got {_shown(header)}")
    stamps: list[str] = []
    columns: list[tuple[int, int, int]] = []  # line number, prompt tokens, output tokens
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        match = _AZURE_ROW.fullmatch(line)
        if match is None:
            raise TraceError(path, number, f"{_AZURE_EXPECTED}, got {_shown(line)}")
        stamps.append(match[1])
        prompt_tokens = _length(path, number, AZURE_NAMES[0], int(match[2]))
        output_tokens = _length(path, number, AZURE_NAMES[1], int(match[3]))
        columns.append((number, prompt_tokens, output_tokens))
    numbers, prompt, output = np.array(columns, dtype=np.int64).reshape(-1, 3).T
    times_ns = _parse_timestamps(path, stamps, numbers)
    arrival_s = (times_ns - times_ns[:1]) * NS
    return _trace_workload(path, "azure", numbers, arrival_s, prompt, output, None, AZURE_NAMES)


def read_mooncake_jsonl(path: str | Path) -> Workload:
    """A Mooncake trace (JSONL): arrival times, lengths and, when given, prefix block hashes."""
    stamps_ms: list[float] = []
    columns: list[tuple[int, int, int]] = []  # line number, prompt tokens, output tokens
    hashes: list[tuple[int, ...]] = []
    for number, line in enumerate(_read_lines(path), start=1):
        if not line.strip():
            continue
        row = _json_object(path, number, line)
        stamps_ms.append(_number(path, number, row, "timestamp"))
        num_prompt = _integer(path, number, row, "input_length")
        columns.append((number, num_prompt, _integer(path, number, row, "output_length")))
        hashes.append(_hash_ids(path, number, row))
    numbers, prompt, output = np.array(columns, dtype=np.int64).reshape(-1, 3).T
    stamps = np.array(stamps_ms, dtype=np.float64)
    arrival_s = (stamps - stamps[:1]) * MS
    prefix_hashes = tuple(hashes) if any(hashes) else None
    names = ("input_length", "output_length")
    return _trace_workload(
        path, "mooncake", numbers, arrival_s, prompt, output, prefix_hashes, names
    )


def _trace_workload(
    path: str | Path,
    trace_format: TraceFormat,
    line_numbers: np.ndarray,
    arrival_s: np.ndarray,
    prompt: np.ndarray,
    output: np.ndarray,
    prefix_hashes: tuple[tuple[int, ...], ...] | None,
    names: tuple[str, str],
) -> Workload:
    """Checks what holds across rows (lengths >= 1, time order), naming the first bad line."""
    if line_numbers.shape[0] == 0:
        raise TraceError(path, None, "the trace has no requests")
    for name, lengths in zip(names, (prompt, output), strict=True):
        if lengths.min() < 1:
            first = int(np.argmax(lengths < 1))
            raise TraceError(
                path, int(line_numbers[first]), f"{name} must be >= 1, got {lengths[first]}"
            )
    backwards = np.diff(arrival_s) < 0
    if backwards.any():
        first = int(np.argmax(backwards)) + 1
        raise TraceError(
            path,
            int(line_numbers[first]),
            f"rows must be in time order, but this one is earlier than line "
            f"{line_numbers[first - 1]}",
        )
    return Workload(
        num_prompt_tokens=read_only(prompt.copy()),
        num_output_tokens=read_only(output.copy()),
        arrival_s=read_only(arrival_s),
        prefix_hashes=prefix_hashes,
        prefix_block_tokens=MOONCAKE_BLOCK_TOKENS,
        source=f"{trace_format} trace {Path(path).name}",
    )


def _read_lines(path: str | Path) -> list[str]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TraceError(path, None, "no such trace file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise TraceError(path, None, f"cannot read the trace file as UTF-8 text: {error}") from None
    return text.splitlines()


def _parse_timestamps(path: str | Path, stamps: list[str], line_numbers: np.ndarray) -> np.ndarray:
    """Nanoseconds since the epoch, parsed in one vectorised call; a bad one names its line."""
    try:
        return np.array(stamps, dtype="datetime64[ns]").astype(np.int64)
    except ValueError:
        for number, stamp in zip(line_numbers, stamps, strict=True):
            try:
                np.datetime64(stamp, "ns")
            except ValueError:
                raise TraceError(path, int(number), f"invalid date or time {stamp!r}") from None
        raise


def _json_object(path: str | Path, number: int, line: str) -> dict[str, Any]:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as error:
        raise TraceError(path, number, f"{_MOONCAKE_EXPECTED}; invalid JSON: {error.msg}") from None
    if not isinstance(row, dict):
        raise TraceError(path, number, f"{_MOONCAKE_EXPECTED}, got {_shown(line)}")
    return row


def _number(path: str | Path, number: int, row: dict[str, Any], key: str) -> float:
    value = _field(path, number, row, key)
    finite = isinstance(value, int | float) and abs(value) < 1e300  # int: no float overflow
    if isinstance(value, bool) or not finite:
        raise TraceError(path, number, f"{key} must be a finite number, got {_shown(value)}")
    return float(value)


def _integer(path: str | Path, number: int, row: dict[str, Any], key: str) -> int:
    value = _field(path, number, row, key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TraceError(path, number, f"{key} must be an integer, got {_shown(value)}")
    return _length(path, number, key, value)


def _length(path: str | Path, number: int, key: str, value: int) -> int:
    """A row's token count, at most `MAX_TOKENS` (so that it fits an int64 column)."""
    if not -MAX_TOKENS <= value <= MAX_TOKENS:  # small negatives: the >= 1 check, on arrays
        raise TraceError(path, number, f"{key} must be 1 to {MAX_TOKENS:,} tokens, got {value}")
    return value


def _hash_ids(path: str | Path, number: int, row: dict[str, Any]) -> tuple[int, ...]:
    value = row.get("hash_ids", [])
    # set(map(type, ...)) runs in C: a third of the time of an isinstance loop; bool is no int
    if not isinstance(value, list) or not set(map(type, value)) <= {int}:
        raise TraceError(path, number, f"hash_ids must be a list of integers, got {_shown(value)}")
    return tuple(value)


def _field(path: str | Path, number: int, row: dict[str, Any], key: str) -> Any:
    if key not in row:
        raise TraceError(path, number, f"{_MOONCAKE_EXPECTED}; {key} is missing")
    return row[key]


def _shown(value: Any) -> str:
    """`repr(value)`, cut to 80 characters for an error message."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
