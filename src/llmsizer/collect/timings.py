"""The raw facts of a collection: one `Timing` per kernel and size, kept beside the fit.

Each row says what ran (kind, layer name, precision, sizes), the work the performance
model counts for it (FLOPs, bytes) and the median of the repeats in seconds. The fit
(`llmsizer.collect.fit`) reads only these rows, so a timings CSV can be re-fitted later.
"""

from __future__ import annotations

import csv
import io
from dataclasses import asdict, dataclass, fields
from enum import StrEnum


class Kind(StrEnum):
    """The kinds of work a step is made of, as `collect` times them."""

    GEMM = "gemm"  # a linear layer at the model's shape
    EXPERT_GEMM = "expert_gemm"  # an MoE layer's routed experts, one batched matmul
    SQUARE_GEMM = "square_gemm"  # n x n x n, for the device's measured peak
    PREFILL_ATTENTION = "prefill_attention"  # causal SDPA over a whole prompt
    DECODE_ATTENTION = "decode_attention"  # one query per sequence over its KV
    ELEMENTWISE = "elementwise"  # norms, residuals, rotary, activation of one layer
    COPY = "copy"  # device memory copy, for the measured bandwidth peak
    ALLREDUCE = "allreduce"  # sum of the activations of `tokens` tokens over `batch` ranks


@dataclass(frozen=True, slots=True)
class Timing:
    """One timed kernel: sizes (0 where they do not apply), counted work, median seconds.

    `tokens` is the GEMM's rows, the prompt length or the elementwise tokens; `batch` and
    `context` the decode attention's sequences and KV length, an expert GEMM's experts hit
    and rows each; an all-reduce's `batch` is its ranks and `bytes` its message.
    """

    kind: Kind
    name: str
    precision: str
    tokens: int
    batch: int
    context: int
    flops: float
    bytes: float
    seconds: float

    @property
    def flops_per_s(self) -> float:
        return self.flops / self.seconds

    @property
    def bytes_per_s(self) -> float:
        return self.bytes / self.seconds


COLUMNS = tuple(f.name for f in fields(Timing))


def timings_csv(timings: list[Timing]) -> str:
    """The rows as CSV text (header `COLUMNS`)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for t in timings:
        writer.writerow({**asdict(t), "kind": t.kind.value})
    return out.getvalue()


def parse_timings_csv(text: str) -> list[Timing]:
    """Rows written by `timings_csv`; a ValueError names a bad row."""
    rows = list(csv.DictReader(io.StringIO(text)))
    timings = []
    for n, row in enumerate(rows, start=2):
        try:
            timings.append(
                Timing(
                    kind=Kind(row["kind"]),
                    name=row["name"],
                    precision=row["precision"],
                    tokens=int(row["tokens"]),
                    batch=int(row["batch"]),
                    context=int(row["context"]),
                    flops=float(row["flops"]),
                    bytes=float(row["bytes"]),
                    seconds=float(row["seconds"]),
                )
            )
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"timings row {n}: {e}") from e
    return timings
