"""What a simulation returns: one record per request and a log of every engine step."""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np

from llmsizer.records import RequestRecord

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
    """Appends one row per step into compact typed arrays (8 bytes a value)."""

    def __init__(self) -> None:
        self.columns = {name: array("d") for name in STEP_FIELDS}
        self.decoded = array("b")

    def append(self, values: tuple[float, ...], decoded: bool) -> None:
        for col, v in zip(self.columns.values(), values, strict=True):
            col.append(v)
        self.decoded.append(decoded)

    def __len__(self) -> int:
        return len(self.decoded)

    def build(self) -> StepLog:
        cols = {k: np.frombuffer(v, dtype=np.float64) for k, v in self.columns.items()}
        return StepLog(**cols, decoded=np.frombuffer(self.decoded, dtype=np.int8).astype(bool))


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
    """Records in request-id order, the step log, and the facts the pictures need."""

    records: list[RequestRecord]
    steps: StepLog
    num_preemptions: int
    peak_kv_blocks_used: int
    num_kv_blocks: int | None
    holds_slots_until_batch_end: bool  # static/dynamic batching: finished requests pad

    @property
    def duration_s(self) -> float:
        if not self.records:
            return 0.0
        return max(r.finish_s or 0.0 for r in self.records) - min(r.arrival_s for r in self.records)
