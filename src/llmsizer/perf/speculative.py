"""Speculative decoding: draft k tokens cheaply, verify them in one pass of the target.

A drafter proposes `num_speculative_tokens` (k) tokens per sequence; the target scores all
k + 1 positions in one forward pass and keeps the longest accepted prefix plus one token of
its own. If each draft token is accepted with probability a, independently, a step yields

    E[tokens] = (1 - a^(k+1)) / (1 - a)        (Leviathan, Kalman and Matias 2023, eq. 1)

tokens per sequence (k + 1 when a = 1). The step costs the drafting plus a verification pass
over (k + 1) tokens per sequence. At small batch the target is memory-bound: verifying k + 1
tokens costs about as much as decoding one (weights are read once either way), so the extra
tokens are nearly free. At large batch the step is compute-bound, verification costs about
k + 1 times a decode step, and speculation loses (the course: "helpful only if the GPU is
underutilized due to small batch sizes").

Drafters: a separate draft model runs k autoregressive decode steps (its own `StepCost`);
EAGLE (Li et al. 2024) runs k steps of a one-layer head on the target's features, and Medusa
(Cai et al. 2024) runs its k heads once in parallel (`num_draft_passes=1`); both heads are
priced by `draft_head_model`, a one-layer copy of the target.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from llmsizer.perf.batch_shape import BatchLike, BatchShape, ChunkShape, decode_batch
from llmsizer.perf.step import StepModel

StepCostFn = Callable[[BatchLike], float]


@dataclass(frozen=True, slots=True)
class SpeculativeDecoding:
    """Speculation settings: `num_speculative_tokens` (vLLM's name) drafted per step, each
    accepted with probability `acceptance_rate`; the drafter runs `num_draft_passes` times
    per step (None: k, an autoregressive drafter; 1: Medusa-style parallel heads)."""

    num_speculative_tokens: int
    acceptance_rate: float
    num_draft_passes: int | None = None

    def __post_init__(self) -> None:
        if self.num_speculative_tokens < 1:
            raise ValueError("num_speculative_tokens must be >= 1")
        if not 0.0 <= self.acceptance_rate <= 1.0:
            raise ValueError(f"acceptance_rate must be in [0, 1], got {self.acceptance_rate}")

    @property
    def expected_tokens_per_step(self) -> float:
        """(1 - a^(k+1)) / (1 - a): tokens each sequence gains per verification step."""
        k, a = self.num_speculative_tokens, self.acceptance_rate
        if a == 1.0:
            return float(k + 1)
        return (1.0 - a ** (k + 1)) / (1.0 - a)


@dataclass(frozen=True, slots=True)
class SpeculativeStep:
    """One speculative step for a decode batch, against plain decoding of the same batch."""

    draft_time_s: float
    verify_time_s: float
    expected_tokens_per_seq: float
    baseline_step_time_s: float

    @property
    def step_time_s(self) -> float:
        return self.draft_time_s + self.verify_time_s

    @property
    def time_per_token_s(self) -> float:
        """Mean time between a sequence's tokens (its TPOT under speculation)."""
        return self.step_time_s / self.expected_tokens_per_seq

    @property
    def speedup(self) -> float:
        """Plain TPOT over speculative TPOT: > 1 means speculation pays."""
        return self.baseline_step_time_s / self.time_per_token_s


def draft_head_model(target: StepModel) -> StepModel:
    """A one-layer dense copy of the target on the same GPUs: the EAGLE/Medusa drafter."""
    model = dataclasses.replace(
        target.deployment.model,
        name=f"{target.deployment.model.name}-draft-head",
        num_layers=1,
        moe=None,
        num_sliding_window_layers=0,
        sliding_window=None,
    )
    deployment = dataclasses.replace(target.deployment, model=model, pipeline_parallel_size=1)
    return StepModel(deployment, target.efficiency)


def speculative_step(
    target: StepModel,
    spec: SpeculativeDecoding,
    draft: StepCostFn,
    num_seqs: int,
    context_tokens_per_seq: int,
) -> SpeculativeStep:
    """Price one speculative step for `num_seqs` sequences at a given context length."""
    k = spec.num_speculative_tokens
    passes = k if spec.num_draft_passes is None else spec.num_draft_passes
    draft_time = sum(
        draft(decode_batch(num_seqs, context_tokens_per_seq + i)) for i in range(passes)
    )
    chunk = ChunkShape(num_new_tokens=k + 1, num_context_tokens=context_tokens_per_seq)
    verify_batch = BatchShape(prefill_chunks=(chunk,) * num_seqs)
    # the step model computes logits for one row per chunk; verification needs all k + 1
    extra_logits_s = target.lm_head_time_s((k + 1) * num_seqs) - target.lm_head_time_s(num_seqs)
    verify_time = target(verify_batch) + extra_logits_s
    return SpeculativeStep(
        draft_time_s=draft_time,
        verify_time_s=verify_time,
        expected_tokens_per_seq=spec.expected_tokens_per_step,
        baseline_step_time_s=target(decode_batch(num_seqs, context_tokens_per_seq)),
    )
