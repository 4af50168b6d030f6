"""One flat `RequestRecord` per request, written by the simulator and the benchmark alike.

Records hold raw facts (when the request arrived, when each output token appeared, how long
the prompt and output were, what went wrong); every metric is computed later from them by
`llmsizer.metrics`, the same way for simulated and measured runs.

Times are absolute seconds on the run's own clock (the simulator starts at 0; the benchmark
client uses a monotonic clock and shifts it so that its first request is sent at 0).
"""

from __future__ import annotations

import csv
import gzip
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import IO, Any, cast, overload

import numpy as np

from llmsizer.errors import parse_json

EMPTY_TIMES = np.zeros(0, dtype=np.float64)
EMPTY_TIMES.setflags(write=False)


@dataclass(frozen=True, slots=True, eq=False)
class RequestRecord:
    """What happened to one request.

    `token_times_s[i]` is when output token i reached the client (simulator: the end of the
    engine step that produced it). Its length is the number of output tokens produced, which
    can be shorter than `num_output_tokens_requested` when the request failed.
    """

    request_id: int
    arrival_s: float  # when the request was sent (benchmark) or arrived at the engine (sim)
    num_prompt_tokens: int
    num_output_tokens_requested: int
    token_times_s: np.ndarray = field(default_factory=lambda: EMPTY_TIMES)
    scheduled_s: float | None = None  # first time the engine scheduled it (sim only)
    finish_s: float | None = None  # last token, or the moment the error was seen
    num_cached_tokens: int = 0  # prompt tokens served from the prefix cache
    num_preemptions: int = 0
    error: str | None = None
    instance_id: int | None = None  # which instance of a fleet served it (None: one engine)

    @property
    def num_output_tokens(self) -> int:
        return int(self.token_times_s.shape[0])

    @property
    def ok(self) -> bool:
        return self.error is None and self.num_output_tokens > 0

    @property
    def ttft_s(self) -> float | None:
        return float(self.token_times_s[0]) - self.arrival_s if self.num_output_tokens else None

    @property
    def e2el_s(self) -> float | None:
        return None if self.finish_s is None else self.finish_s - self.arrival_s

    @property
    def tpot_s(self) -> float | None:
        """(E2E - TTFT) / (output tokens - 1), vLLM's TPOT; None for a single-token output."""
        n = self.num_output_tokens
        if n < 2:
            return None
        return float(self.token_times_s[-1] - self.token_times_s[0]) / (n - 1)

    @property
    def queue_s(self) -> float | None:
        return None if self.scheduled_s is None else self.scheduled_s - self.arrival_s


@dataclass(frozen=True, slots=True, eq=False, kw_only=True)
class RecordTable(Sequence[RequestRecord]):
    """A simulated run's records as columns: a `Sequence[RequestRecord]` that builds each
    record when asked, so a million requests cost arrays, not a million objects.

    Token times are spans of one shared buffer: request i's engine times are
    `token_buffer[token_start[i] : token_start[i] + num_output_tokens[i]]` (the simulator's
    buffer is its step end times followed by the few runs that are not one slice of them).
    With `first_token_delay_s` D > 0 the client sees token j at max(t_j, t_0 + D), as
    `llmsizer.sim.delivery.hold_first_token`; `finish_s` is already the held last token.
    Every request completed (a simulator has no failed requests). Slicing gives a table
    over the same buffer, indexing a `RequestRecord` equal field by field to the one the
    list form held.
    """

    request_id: np.ndarray
    arrival_s: np.ndarray
    scheduled_s: np.ndarray
    finish_s: np.ndarray
    num_prompt_tokens: np.ndarray
    num_output_tokens_requested: np.ndarray
    num_cached_tokens: np.ndarray
    num_preemptions: np.ndarray
    token_start: np.ndarray
    num_output_tokens: np.ndarray
    token_buffer: np.ndarray
    first_token_delay_s: float = 0.0

    def __len__(self) -> int:
        return int(self.request_id.shape[0])

    @overload
    def __getitem__(self, index: int) -> RequestRecord: ...
    @overload
    def __getitem__(self, index: slice) -> RecordTable: ...
    def __getitem__(self, index: int | slice) -> RequestRecord | RecordTable:
        if isinstance(index, slice):
            return self._rows(index)
        i = range(len(self))[index]  # IndexError for an index out of range, as a list
        times = self.token_times_s(i)
        return RequestRecord(
            request_id=int(self.request_id[i]),
            arrival_s=float(self.arrival_s[i]),
            num_prompt_tokens=int(self.num_prompt_tokens[i]),
            num_output_tokens_requested=int(self.num_output_tokens_requested[i]),
            token_times_s=times,
            scheduled_s=float(self.scheduled_s[i]),
            finish_s=float(self.finish_s[i]),
            num_cached_tokens=int(self.num_cached_tokens[i]),
            num_preemptions=int(self.num_preemptions[i]),
        )

    def __iter__(self) -> Iterator[RequestRecord]:
        for i in range(len(self)):
            yield self[i]

    def token_times_s(self, i: int) -> np.ndarray:
        """Request i's token times as the client sees them (a view when there is no hold)."""
        start = int(self.token_start[i])
        times = self.token_buffer[start : start + int(self.num_output_tokens[i])]
        if self.first_token_delay_s > 0:
            return np.maximum(times, times[0] + self.first_token_delay_s)
        return times

    def first_token_s(self) -> np.ndarray:
        """Each request's first token time (after the hold), as an array."""
        first = self.token_buffer[self.token_start]
        return first + self.first_token_delay_s if self.first_token_delay_s > 0 else first

    def last_token_s(self) -> np.ndarray:
        """Each request's last token time (after the hold), as an array."""
        if self.first_token_delay_s > 0:
            return self.finish_s  # max(t_last, t_0 + D): the hold can reach the last token
        return self.token_buffer[self.token_start + self.num_output_tokens - 1]

    def _rows(self, index: slice) -> RecordTable:
        return replace(self, **{name: getattr(self, name)[index] for name in _ROW_COLUMNS})


@dataclass(frozen=True, slots=True, eq=False, kw_only=True)
class ChunkTable(RecordTable):
    """A `RecordTable` whose spans are the times of chunks of tokens (a speculating engine's
    verify steps, `instance.speculation`): request i's `num_tokens[i]` tokens arrive over
    its span's times by `spread_chunks`, the first alone. Indexing builds the record of
    tokens; a summary reads the chunks (`metrics`: O(steps), not O(tokens))."""

    num_tokens: np.ndarray  # tokens each request received, at least one a time

    def __post_init__(self) -> None:
        short = np.flatnonzero(self.num_tokens < self.num_output_tokens)
        if short.size:
            i = int(short[0])
            raise ValueError(
                f"request {int(self.request_id[i])} gets {int(self.num_tokens[i])} tokens "
                f"over {int(self.num_output_tokens[i])} chunk times: at least one a time"
            )

    @overload
    def __getitem__(self, index: int) -> RequestRecord: ...
    @overload
    def __getitem__(self, index: slice) -> ChunkTable: ...
    def __getitem__(self, index: int | slice) -> RequestRecord | ChunkTable:
        if isinstance(index, slice):
            rows = {name: getattr(self, name)[index] for name in _ROW_COLUMNS}
            return replace(self, **rows, num_tokens=self.num_tokens[index])
        record = RecordTable.__getitem__(self, index)
        times = record.token_times_s
        n = np.array([times.shape[0]])
        spread, _ = spread_chunks(times, n, np.arange(n[0]), self.num_tokens[index : index + 1])
        return replace(record, token_times_s=spread)

    def num_zero_gaps(self) -> int:
        """Gaps of zero between tokens of one chunk, over all records: each record's tokens
        beyond its times (its other gaps are its times', `metrics`)."""
        return int((self.num_tokens - self.num_output_tokens).sum())


def spread_chunks(
    times: np.ndarray, lengths: np.ndarray, within: np.ndarray, num_tokens: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(token times, tokens per time) of records of `lengths` chunk `times` each (one after
    another), `within` each time's index in its record, `num_tokens` each: the first time
    brings the first token, and the n - 1 after it spread as evenly as they divide over the
    s later times (time j has delivered round(j (n - 1) / s) of them); records of one time
    or one token keep one token a time. Token times are read-only."""
    steps = lengths - 1
    spread = (steps > 0) & (num_tokens > 1)
    ratio = np.where(spread, (num_tokens - 1) / np.where(spread, steps, 1), 1.0)
    done = np.round(within * np.repeat(ratio, lengths)).astype(np.int64)
    counts = np.diff(done, prepend=0)
    counts[within == 0] = 1  # each record's first token
    expanded = np.repeat(times, counts)
    expanded.setflags(write=False)
    return expanded, counts


# the columns a slice cuts: one value per request (not the shared buffer, not the hold)
_ROW_COLUMNS = tuple(
    f.name for f in fields(RecordTable) if f.name not in ("token_buffer", "first_token_delay_s")
)

CSV_FIELDS = (
    "request_id",
    "arrival_s",
    "scheduled_s",
    "first_token_s",
    "finish_s",
    "num_prompt_tokens",
    "num_output_tokens",
    "num_output_tokens_requested",
    "num_cached_tokens",
    "num_preemptions",
    "ttft_ms",
    "tpot_ms",
    "e2el_ms",
    "queue_ms",
    "error",
)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3


def record_to_row(r: RequestRecord) -> dict[str, Any]:
    """A flat row (no per-token times) for CSV output; latencies in ms as in vLLM's output."""
    row: dict[str, Any] = {
        "request_id": r.request_id,
        "arrival_s": r.arrival_s,
        "scheduled_s": r.scheduled_s,
        "first_token_s": float(r.token_times_s[0]) if r.num_output_tokens else None,
        "finish_s": r.finish_s,
        "num_prompt_tokens": r.num_prompt_tokens,
        "num_output_tokens": r.num_output_tokens,
        "num_output_tokens_requested": r.num_output_tokens_requested,
        "num_cached_tokens": r.num_cached_tokens,
        "num_preemptions": r.num_preemptions,
        "ttft_ms": _ms(r.ttft_s),
        "tpot_ms": _ms(r.tpot_s),
        "e2el_ms": _ms(r.e2el_s),
        "queue_ms": _ms(r.queue_s),
        "error": r.error,
    }
    if r.instance_id is not None:
        row["instance_id"] = r.instance_id
    return row


def record_to_json(r: RequestRecord) -> dict[str, Any]:
    """Everything in the record, token times included: the lossless form (`instance_id`
    only when a fleet set it)."""
    d: dict[str, Any] = {
        "request_id": r.request_id,
        "arrival_s": r.arrival_s,
        "num_prompt_tokens": r.num_prompt_tokens,
        "num_output_tokens_requested": r.num_output_tokens_requested,
        "token_times_s": r.token_times_s.tolist(),
        "scheduled_s": r.scheduled_s,
        "finish_s": r.finish_s,
        "num_cached_tokens": r.num_cached_tokens,
        "num_preemptions": r.num_preemptions,
        "error": r.error,
    }
    if r.instance_id is not None:
        d["instance_id"] = r.instance_id
    return d


def record_from_json(d: dict[str, Any]) -> RequestRecord:
    times = np.asarray(d.get("token_times_s", []), dtype=np.float64)
    return RequestRecord(
        request_id=int(d["request_id"]),
        arrival_s=float(d["arrival_s"]),
        num_prompt_tokens=int(d["num_prompt_tokens"]),
        num_output_tokens_requested=int(d["num_output_tokens_requested"]),
        token_times_s=times,
        scheduled_s=d.get("scheduled_s"),
        finish_s=d.get("finish_s"),
        num_cached_tokens=int(d.get("num_cached_tokens", 0)),
        num_preemptions=int(d.get("num_preemptions", 0)),
        error=d.get("error"),
        instance_id=None if d.get("instance_id") is None else int(d["instance_id"]),
    )


def write_csv(records: Iterable[RequestRecord], path: Path) -> None:
    records = list(records)
    fleet = any(r.instance_id is not None for r in records)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=(*CSV_FIELDS, "instance_id") if fleet else CSV_FIELDS)
        w.writeheader()
        for r in records:
            w.writerow(record_to_row(r))


class JsonlWriter:
    """Appends one record per line and flushes it, so an interrupted run keeps what it has."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, record: RequestRecord) -> None:
        self._stream.write(json.dumps(record_to_json(record)) + "\n")
        self._stream.flush()


def open_jsonl(path: Path, mode: str = "r") -> IO[str]:
    """A records file as text, gzip-compressed when its name ends in `.gz` (a flush then
    ends a complete deflate block, so an interrupted run's file still reads)."""
    if path.suffix == ".gz":
        return cast(IO[str], gzip.open(path, mode + "t", encoding="utf-8"))
    return path.open(mode, encoding="utf-8")


def jsonl_with_label(path: Path, label: str) -> Path:
    """`runs.jsonl` -> `runs-<label>.jsonl` (and `runs.jsonl.gz` -> `runs-<label>.jsonl.gz`)."""
    suffix = "".join(path.suffixes[-2:]) if path.suffix == ".gz" else path.suffix
    stem = path.name.removesuffix(suffix) if suffix else path.name
    return path.with_name(f"{stem}-{label}{suffix}")


def write_jsonl(records: Iterable[RequestRecord], path: Path) -> None:
    with open_jsonl(path, "w") as f:
        w = JsonlWriter(f)
        for r in records:
            w.write(r)


def read_jsonl(path: Path) -> Iterator[RequestRecord]:
    """The records of a JSONL file (plain or `.gz`); a compressed file cut short by an
    interrupted run yields every record written before the cut."""
    with open_jsonl(path) as f:
        try:
            for number, line in enumerate(f, start=1):
                if line.strip():
                    yield _record_on_line(parse_json(line, path, "records file", line=number))
        except EOFError:  # gzip without its end marker: the run was stopped
            return
        except UnicodeDecodeError:
            raise ValueError(f"records file '{path}' is not UTF-8 text") from None


def _record_on_line(value: Any) -> RequestRecord:
    if not isinstance(value, dict):
        raise ValueError(f"a records line holds a {type(value).__name__}, not a record object")
    return record_from_json(value)


def write_records(records: Sequence[RequestRecord], path: Path) -> None:
    """Write records as CSV (one flat row each) or JSONL (lossless), by the file's suffix."""
    if path.suffix.lower() == ".csv":
        write_csv(records, path)
    else:
        write_jsonl(records, path)
