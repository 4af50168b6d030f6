"""What the performance model needs to know about a batch, without importing the simulator.

The simulator's `llmsizer.sim.batch.Batch` satisfies `BatchLike` structurally; so does the
small `BatchShape` here, which perf uses to price batches it builds itself (speculative
verification, tests, calibration scenarios). Dependencies stay one way: sim imports perf,
never the reverse.

Per step, a batch is prompt chunks (each `num_new_tokens` computed after
`num_context_tokens` already in the KV cache) plus `num_decode_seqs` sequences generating one
token each, whose contexts sum to `num_decode_context_tokens`. For the step cost it reduces
to a few sums (`aggregate`, named by `BatchAggregates`): tokens, sampled rows, the prompt
chunks' causal (query, key) pairs and KV reads, the decoding sequences' keys.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol


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


class BatchAggregates(NamedTuple):
    """The names of the numbers `aggregate` reduces a batch to, in order. Pairs and keys are
    per layer.

    Prompt chunks contribute their causal (query, key) pairs and the KV tokens attention
    reads, once as full-attention layers see them and once as sliding-window layers do
    (`window_pairs`); decoding sequences contribute the keys they read.
    """

    num_tokens: int
    num_sampled: int
    num_prefill_tokens: int
    prefill_pairs_full: float
    prefill_pairs_window: float
    prefill_kv_full: float
    prefill_kv_window: float
    num_decode_seqs: int
    decode_keys_full: float
    decode_keys_window: float


def window_pairs(num_new: int, num_context: int, window: int) -> float:
    """(query, key) pairs of a causal chunk when each query sees at most `window` keys.

    Query i (1-based) of the chunk sits at position p = num_context + i and sees min(p, W)
    keys; the sum splits where p reaches W:

        p:  first ........ W ........ last
            keys = p (a ramp)   keys = W
    """
    first, last = num_context + 1, num_context + num_new
    if last <= window:
        return 0.5 * (first + last) * num_new
    if first > window:
        return float(num_new * window)
    ramp = 0.5 * (first + window) * (window - first + 1)
    return ramp + (last - window) * window


# What `aggregate` returns: a plain tuple (the step cost unpacks it once per engine step),
# which `BatchAggregates._make` names.
Aggregates = tuple[int, int, int, float, float, float, float, int, float, float]


def aggregate(batch: BatchLike, window: int) -> Aggregates:
    """Reduce a batch to what the step cost needs (`BatchAggregates` order); `window` is the
    sliding window in tokens (0: the model has none). A chunk of n new tokens after ctx
    cached ones has n ctx + n (n + 1) / 2 causal pairs and reads ctx + n keys; every prompt
    chunk and every decoding sequence samples one token."""
    num_prefill = 0
    num_chunks = 0
    pairs_full = pairs_window = kv_full = kv_window = 0.0
    for chunk in batch.prefill_chunks:
        n, ctx = chunk.num_new_tokens, chunk.num_context_tokens
        num_prefill += n
        num_chunks += 1
        pairs_full += n * ctx + 0.5 * n * (n + 1)
        kv_full += ctx + n
        if window:
            pairs_window += window_pairs(n, ctx, window)
            kv_window += min(ctx, window) + n
    num_decode = batch.num_decode_seqs
    keys = float(batch.num_decode_context_tokens)
    return (
        num_prefill + num_decode,
        num_chunks + num_decode,
        num_prefill,
        pairs_full,
        pairs_window,
        kv_full,
        kv_window,
        num_decode,
        keys,
        min(keys, float(num_decode * window)) if window else 0.0,
    )


def busiest_rank(a: Aggregates, dp: int) -> Aggregates:
    """The aggregates of the busiest of `dp` attention data-parallel ranks, each running its
    own requests: spread evenly, a rank holds ceil(c / dp) of the c prompt chunks and
    ceil(n / dp) of the n decoding sequences, with that share of their tokens, pairs and
    keys (the batch's means). The step waits for it (`llmsizer.perf.step`)."""
    (_, sampled, num_prefill, pairs_full, pairs_window, kv_full, kv_window,
     num_decode, keys_full, keys_window) = a  # fmt: skip
    chunks = sampled - num_decode
    rank_chunks = -(-chunks // dp)
    share = rank_chunks / chunks if chunks else 0.0
    rank_prefill = math.ceil(num_prefill * share)
    rank_decode = -(-num_decode // dp)
    return (
        rank_prefill + rank_decode,
        rank_chunks + rank_decode,
        rank_prefill,
        pairs_full * share,
        pairs_window * share,
        kv_full * share,
        kv_window * share,
        rank_decode,
        keys_full * rank_decode / num_decode if num_decode else 0.0,
        keys_window * rank_decode / num_decode if num_decode else 0.0,
    )
