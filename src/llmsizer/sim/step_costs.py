"""Two simple step costs: the course notebook's fixed ticks, and a linear model.

Both are `StepCost`s (a `Batch` in, seconds out). The GPU roofline model lives in
`llmsizer.perf` and plugs in the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmsizer.sim.batch import Batch


@dataclass(frozen=True, slots=True)
class FixedTicks:
    """The notebook's model: a step costs `prefill_ticks` ticks if it holds any prompt work,
    otherwise `decode_ticks`, whatever the batch size. One tick is `tick_s` seconds."""

    tick_s: float = 0.010
    prefill_ticks: int = 1
    decode_ticks: int = 1

    def __call__(self, batch: Batch) -> float:
        ticks = self.prefill_ticks if batch.prefill_chunks else self.decode_ticks
        return ticks * self.tick_s


@dataclass(frozen=True, slots=True)
class LinearStepCost:
    """`a + b * prefill_tokens + c * decode_seqs + d * context_tokens`, in seconds.

    `context_tokens` counts every KV token read by attention: each decode sequence's context
    plus, for prompt chunks, the context before the chunk and half the chunk (causal mask).
    The coefficients are whatever a user fitted or measured.
    """

    a_s: float = 0.005
    b_s_per_prefill_token: float = 0.0
    c_s_per_decode_seq: float = 0.0
    d_s_per_context_token: float = 0.0

    def __call__(self, batch: Batch) -> float:
        prefill = 0
        context = batch.num_decode_context_tokens
        for c in batch.prefill_chunks:
            prefill += c.num_new_tokens
            context += c.num_context_tokens + c.num_new_tokens // 2
        return (
            self.a_s
            + self.b_s_per_prefill_token * prefill
            + self.c_s_per_decode_seq * batch.num_decode_seqs
            + self.d_s_per_context_token * context
        )
