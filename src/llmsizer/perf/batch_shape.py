"""What the performance model needs to know about a batch, without importing the simulator.

The simulator's `llmsizer.sim.batch.Batch` satisfies `BatchLike` structurally; so does the
small `BatchShape` here, which perf uses to price batches it builds itself (speculative
verification, tests, calibration scenarios). Dependencies stay one way: sim imports perf,
never the reverse.

Per step, a batch is prompt chunks (each `num_new_tokens` computed after
`num_context_tokens` already in the KV cache) plus `num_decode_seqs` sequences generating one
token each, whose contexts sum to `num_decode_context_tokens`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class PrefillChunkLike(Protocol):
    """A prompt chunk: `num_new_tokens` computed now after `num_context_tokens` cached."""

    @property
    def num_new_tokens(self) -> int: ...

    @property
    def num_context_tokens(self) -> int: ...


class BatchLike(Protocol):
    """One engine step's work, as `llmsizer.sim.batch.Batch` describes it."""

    @property
    def prefill_chunks(self) -> Sequence[PrefillChunkLike]: ...

    @property
    def num_decode_seqs(self) -> int: ...

    @property
    def num_decode_context_tokens(self) -> int: ...


@dataclass(frozen=True, slots=True)
class ChunkShape:
    """A concrete `PrefillChunkLike`."""

    num_new_tokens: int
    num_context_tokens: int = 0


@dataclass(frozen=True, slots=True)
class BatchShape:
    """A concrete `BatchLike` for batches perf builds itself."""

    prefill_chunks: tuple[ChunkShape, ...] = ()
    num_decode_seqs: int = 0
    num_decode_context_tokens: int = 0


def decode_batch(num_seqs: int, context_tokens_per_seq: int) -> BatchShape:
    """`num_seqs` sequences each generating one token after `context_tokens_per_seq`."""
    return BatchShape(
        num_decode_seqs=num_seqs,
        num_decode_context_tokens=num_seqs * context_tokens_per_seq,
    )


def prefill_batch(num_prompts: int, prompt_tokens: int, context_tokens: int = 0) -> BatchShape:
    """`num_prompts` whole prompts (or chunks) of `prompt_tokens` each, computed together."""
    chunk = ChunkShape(prompt_tokens, context_tokens)
    return BatchShape(prefill_chunks=(chunk,) * num_prompts)
