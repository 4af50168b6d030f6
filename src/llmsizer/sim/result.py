"""What a simulation returns: one record per request and a log of every engine step."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from llmsizer.records import RecordTable, RequestRecord

STEP_FIELDS = (
    "start_s",
    "end_s",
    "num_prefill_tokens",
    "num_decode_seqs",
    "num_padding_seqs",
    "num_running",
    "num_waiting",
    "num_kv_blocks_used",
)


class StepLogBuilder:
    """Appends the step log to flat typed arrays (8 bytes a value, no objects kept).

    A step the scheduler decided (`Engine`'s general path) is a row: `times` gets (start_s,
    end_s), `counts` the other STEP_FIELDS in order, then whether decodes ran (0 / 1).
    Decode-only steps run in a row (`_decode_steps`) store only what changes each step,
    their end time (`decode_end_s`; each starts where the one before ended) and the KV
    blocks used (`decode_kv_blocks`), and one row per *segment* of them whose batch stays
    the same: `segments` gets (first step, number of steps, num_decode_seqs, num_running,
    num_waiting), `segment_start_s` its first step's start. Integers go to integer arrays:
    converting them to doubles one by one was a tenth of a compiled engine's time, and each
    value appended is a conversion, so a decode-only step appends two, not nine."""

    def __init__(self) -> None:
        self.times = array("d")
        self.counts = array("q")
        self.decode_end_s = array("d")
        self.decode_kv_blocks = array("q")
        self.segments = array("q")
        self.segment_start_s = array("d")

    @property
    def num_steps(self) -> int:
        return len(self.times) // 2 + len(self.decode_end_s)

    def add_segment(self, first: int, num: int, row: tuple[int, int, int], start_s: float) -> None:
        """Decode-only steps `first` .. `first + num - 1` (their end times and KV blocks
        already appended) of (num_decode_seqs, num_running, num_waiting) `row`."""
        self.segments.extend((first, num, *row))
        self.segment_start_s.append(start_s)

    def _decode_only(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The segments (a row a field), the decode-only steps before each segment, and
        those steps' indices: each segment's first step, counted on within it."""
        segments = np.frombuffer(self.segments, dtype=np.int64).reshape(-1, 5).T
        first, lengths = segments[0], segments[1]
        seen = np.cumsum(lengths) - lengths
        return segments, seen, np.arange(len(self.decode_end_s)) + np.repeat(first - seen, lengths)

    def end_s(self) -> np.ndarray:
        """Every step's end time so far, as `build` gives it, without the other columns (a
        run's progress checked cheaply: `early_stop.WatchedRun`)."""
        _, _, at = self._decode_only()
        end_s = np.empty(self.num_steps)
        decided = np.ones(self.num_steps, dtype=bool)
        decided[at] = False
        end_s[decided] = np.frombuffer(self.times, dtype=np.float64)[1::2]
        end_s[at] = np.frombuffer(self.decode_end_s, dtype=np.float64)
        return end_s

    def build(self) -> StepLog:
        times = np.frombuffer(self.times, dtype=np.float64).reshape(-1, 2)
        counts = np.frombuffer(self.counts, dtype=np.int64).reshape(-1, len(STEP_FIELDS) - 1)
        segments, seen, at = self._decode_only()
        lengths = segments[1]
        decided = np.ones(self.num_steps, dtype=bool)
        decided[at] = False
        # One row a column, each converted as it is copied.
        columns = np.empty((len(STEP_FIELDS) + 1, self.num_steps))
        columns[:2, decided] = times.T
        columns[2:, decided] = counts.T
        end_s = np.frombuffer(self.decode_end_s, dtype=np.float64)
        columns[1, at] = end_s
        start_s = np.empty_like(end_s)
        start_s[1:] = end_s[:-1]
        start_s[seen] = np.frombuffer(self.segment_start_s, dtype=np.float64)
        columns[0, at] = start_s
        del start_s  # each temporary freed before the next: the allocator reuses its pages
        columns[2, at] = 0.0  # no prompt work
        columns[4, at] = 0.0  # no padding
        for row, field in ((3, 2), (5, 3), (6, 4)):  # a segment's batch, on each of its steps
            columns[row, at] = np.repeat(segments[field], lengths)
        columns[7, at] = np.frombuffer(self.decode_kv_blocks, dtype=np.int64)
        columns[8, at] = 1.0  # decoded
        cols = {name: columns[i] for i, name in enumerate(STEP_FIELDS)}
        return StepLog(**cols, decoded=columns[-1] > 0.5)


@dataclass(frozen=True, slots=True, eq=False)
class StepLog:
    """Per engine step, as arrays: when it ran, what it held, what was left waiting."""

    start_s: np.ndarray
    end_s: np.ndarray
    num_prefill_tokens: np.ndarray
    num_decode_seqs: np.ndarray
    num_padding_seqs: np.ndarray
    num_running: np.ndarray
    num_waiting: np.ndarray
    num_kv_blocks_used: np.ndarray
    decoded: np.ndarray

    @property
    def num_steps(self) -> int:
        return int(self.start_s.shape[0])

    @property
    def busy_s(self) -> float:
        return float((self.end_s - self.start_s).sum())


@dataclass(frozen=True, slots=True, eq=False)
class SimResult:
    """Records in request-id order, the step log, and the facts the pictures need.

    An engine's `records` are a `RecordTable`: `RequestRecord`s built on access, stored as
    columns (what lets a million requests fit in memory and summarise in O(steps)); a run
    that rewrites its records (speculative decoding) may hold a list.
    """

    records: Sequence[RequestRecord]
    steps: StepLog
    num_preemptions: int
    peak_kv_blocks_used: int
    num_kv_blocks: int | None
    holds_slots_until_batch_end: bool  # static/dynamic batching: finished requests pad

    @property
    def duration_s(self) -> float:
        records = self.records
        if not records:
            return 0.0
        if isinstance(records, RecordTable):
            return float(records.finish_s.max() - records.arrival_s.min())
        return max(r.finish_s or 0.0 for r in records) - min(r.arrival_s for r in records)
