"""What the scheduler decided to run in one engine step, as plain data for the step cost.

A `Batch` is the whole interface between batching policies (which requests, how many tokens
each) and performance models (how long that takes). Decode requests are described in
aggregate because a step's cost depends on their number and total context, not on which
requests they are; prefill chunks are listed because attention over a chunk depends on its
own length and the context before it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, cast

# NamedTuples rather than frozen dataclasses: equally immutable plain data, and five times
# cheaper to build, which matters at one Batch per simulated step.


class PrefillChunk(NamedTuple):
    """`num_new_tokens` prompt tokens computed this step, after `num_context_tokens` in KV."""

    num_new_tokens: int
    num_context_tokens: int = 0


class Batch(NamedTuple):
    """One engine step's work.

    - `prefill_chunks`: prompt tokens being computed (a whole prompt or a chunk of one).
    - `num_decode_seqs`: sequences generating one token each (static batching counts padded
      slots here too: they compute even though their output is thrown away).
    - `num_decode_context_tokens`: sum over those sequences of the tokens already in KV that
      their attention reads.
    """

    prefill_chunks: tuple[PrefillChunk, ...] = ()
    num_decode_seqs: int = 0
    num_decode_context_tokens: int = 0

    @property
    def num_prefill_tokens(self) -> int:
        return sum(c.num_new_tokens for c in self.prefill_chunks)

    @property
    def num_tokens(self) -> int:
        """Tokens in the forward pass (vLLM's `num_scheduled_tokens` total)."""
        return self.num_prefill_tokens + self.num_decode_seqs

    @property
    def num_seqs(self) -> int:
        return len(self.prefill_chunks) + self.num_decode_seqs


_tuple_new = tuple.__new__


def make_batch(
    prefill_chunks: tuple[PrefillChunk, ...], num_decode_seqs: int, num_decode_context_tokens: int
) -> Batch:
    """`Batch(...)` without the NamedTuple's generated `__new__` (a Python function even in
    a compiled engine): the engine builds one per simulated step."""
    return cast(
        Batch, _tuple_new(Batch, (prefill_chunks, num_decode_seqs, num_decode_context_tokens))
    )


StepCost = Callable[[Batch], float]
"""Seconds one engine step takes for a batch. Any callable works: a fixed tick, a linear fit,
the roofline model in `llmsizer.perf`, or a measured table."""


def decode_step_cost(cost: StepCost) -> Callable[[int, int], float]:
    """Seconds of a decode-only step of (sequences, context tokens) under `cost`: the cost's
    own `decode_step_s(num_decode_seqs, num_decode_context_tokens)` when it has one (the
    price of the `Batch` to the bit, without building it: `llmsizer.perf.StepModel`), else
    its price of the `Batch`. (An attribute test, not a runtime-checkable `Protocol`: a
    compiled module cannot define one.)"""
    own = getattr(cost, "decode_step_s", None)
    if own is not None:
        return cast(Callable[[int, int], float], own)
    return lambda n, context: cost(make_batch((), n, context))
