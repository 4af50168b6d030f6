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
    """Appends one row per step to two flat typed arrays (8 bytes a value, two C calls a step):
    `times` gets (start_s, end_s), `counts` the other STEP_FIELDS in order, then whether
    decodes ran (0 / 1). Integers go to an integer array: converting them to doubles one by
    one was a tenth of a compiled engine's time."""

    def __init__(self) -> None:
        self.times = array("d")
        self.counts = array("q")

    @property
    def num_steps(self) -> int:
        return len(self.times) // 2

    def build(self) -> StepLog:
        times = np.frombuffer(self.times, dtype=np.float64).reshape(-1, 2)
        counts = np.frombuffer(self.counts, dtype=np.int64).reshape(-1, len(STEP_FIELDS) - 1)
        # One row a column, each converted as it is copied (a concatenation of transposes
        # and a conversion copied twice, strided: 3x slower at a million requests' steps).
        columns = np.empty((len(STEP_FIELDS) + 1, times.shape[0]))
        columns[:2] = times.T
        columns[2:] = counts.T
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
