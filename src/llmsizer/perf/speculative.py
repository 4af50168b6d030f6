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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from llmsizer.perf.batch_shape import (
    BatchLike,
    BatchShape,
    ChunkShape,
    PrefillChunkLike,
    aggregate,
    decode_batch,
)
from llmsizer.perf.step import StepModel, StepTerms, step_terms, step_time_s
from llmsizer.perf.terms import Terms
from llmsizer.perf.verify_step import (
    VerifyStep,
    graphed_verify_terms,
    verify_aggregates,
    verify_sequence_s,
    verify_state_s,
    verify_step,
    with_verify_state,
)

__all__ = [
    "SpeculativeDecoding",
    "SpeculativeStep",
    "SpeculativeStepCost",
    "VerifyStep",
    "draft_head_model",
    "mtp_head_model",
    "speculative_step",
    "verify_aggregates",
]

_ELEMENTWISE = StepTerms._fields.index("elementwise_s")

StepCostFn = Callable[[BatchLike], float]
_PROMPT_PASSES = 4096  # prompt passes a cost keeps (a few hundred kB): a run's few shapes


@dataclass(frozen=True, slots=True)
class SpeculativeDecoding:
    """Speculation settings: `num_speculative_tokens` (vLLM's name) drafted per step, each
    accepted with probability `acceptance_rate`; the drafter runs `num_draft_passes` times
    per step (None: k, an autoregressive drafter; 1: Medusa-style parallel heads).
    `graphed_verify`: a verify step without prompt work replays a CUDA graph
    (`verify_step.graphed_verify_terms`), as the engines' MTP paths run it (set for MTP
    heads, issue 10; the lever table's EAGLE heads keep the eager verify of issue 11).
    `serial_host`: the engine does a verify step's per-request host work serial with the
    GPU (no overlap scheduler), each decoding sequence of a verify step costing
    `EfficiencyFactors.verify_sequence_overhead_s` (`verify_step.verify_sequence_s`).
    `state_kernel_rate`: the verify kernel's linear-attention state traffic's rate over
    attention bandwidth (`verify_step.STATE_KERNEL_RATE`; 1: the kernel the fits price)."""

    num_speculative_tokens: int
    acceptance_rate: float
    num_draft_passes: int | None = None
    graphed_verify: bool = False
    serial_host: bool = False
    state_kernel_rate: float = 1.0

    def __post_init__(self) -> None:
        if self.num_speculative_tokens < 1:
            raise ValueError("num_speculative_tokens must be >= 1")
        if not 0.0 <= self.acceptance_rate <= 1.0:
            raise ValueError(f"acceptance_rate must be in [0, 1], got {self.acceptance_rate}")
        if not 0.0 < self.state_kernel_rate <= 1.0:
            raise ValueError(f"state_kernel_rate must be in (0, 1], got {self.state_kernel_rate}")

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


def mtp_head_model(target: StepModel, moe_backend: str | None = None) -> StepModel:
    """A one-layer copy of the target on the same GPUs, its experts kept: a model's own MTP
    module, one full decoder block of the target (DeepSeek-V3 report, arXiv:2412.19437,
    section 2.2; its `num_nextn_predict_layers` layer is a MoE layer), run once per draft
    token by the engines' MTP drafters (a dense target's: one dense layer). Its passes run
    inside the target's engine step, so the step's scheduling and input preparation
    (`step_overhead_s`) are paid once, by the target (TensorRT-LLM `MTPWorker`, SGLang
    `EAGLEWorker.forward_batch_speculative_generation`, vLLM `EagleProposer.propose`: one
    scheduler iteration each). A hybrid model's head is a full-attention layer, its
    linear-attention state left out (vLLM `vllm/model_executor/models/qwen3_next_mtp.py` @
    ffdc9857: `Qwen3NextDecoderLayer(layer_type="full_attention")`; Qwen3.5 the same).
    `moe_backend`: the head's routed experts' kernel where the engine runs it apart from the
    target's (`moe_kernels`; None: the target's)."""
    moe = target.deployment.model.moe
    model = dataclasses.replace(
        target.deployment.model,
        name=f"{target.deployment.model.name}-mtp-head",
        num_layers=1,
        moe=None if moe is None else dataclasses.replace(moe, num_moe_layers=1),
        num_sliding_window_layers=0,
        sliding_window=None,
        linear_attention=None,
    )
    deployment = dataclasses.replace(target.deployment, model=model, pipeline_parallel_size=1)
    if moe_backend is not None:
        deployment = dataclasses.replace(deployment, moe_backend=moe_backend)
    return StepModel(deployment, dataclasses.replace(target.efficiency, step_overhead_s=0.0))


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
    verify_time += verify_state_s(target.constants, num_seqs, k, spec.state_kernel_rate)
    host_s = verify_sequence_s(target.constants, num_seqs) if spec.serial_host else 0.0
    if spec.graphed_verify:  # the eager launches a graphed verify step does not pay
        c, graphs = target.constants, target.cuda_graphs
        terms = step_terms(c, aggregate(verify_batch, c.window), graphs)
        decoding = aggregate(decode_batch(num_seqs, context_tokens_per_seq), c.window)
        graphed = graphed_verify_terms(c, decoding, terms, graphs)
        graphed = with_verify_state(c, graphed, num_seqs, k, spec.state_kernel_rate)
        verify_time = step_time_s(c, graphed) + extra_logits_s
    return SpeculativeStep(
        draft_time_s=draft_time,
        verify_time_s=verify_time + host_s,
        expected_tokens_per_seq=spec.expected_tokens_per_step,
        baseline_step_time_s=target(decode_batch(num_seqs, context_tokens_per_seq)),
    )


@dataclass(frozen=True, slots=True)
class _Prompts:
    """A batch's prompt chunks alone: the drafter's pass over new prompt tokens."""

    prefill_chunks: Sequence[PrefillChunkLike]
    num_decode_seqs: int = 0
    num_decode_context_tokens: int = 0


@dataclass(frozen=True, slots=True)
class SpeculativeStepCost:
    """A step cost for an engine that speculates in every decode step: the drafter's k
    passes (and its pass over new prompt tokens) plus the target's verification of k + 1
    tokens per decoding sequence. `tokens_per_step` is not its business: the simulation
    counts steps, `instance.speculation` maps them to tokens.

    Decode-only steps, the simulator's common step, are priced without a batch
    (`decode_step_s`), and runs of them at once (`decode_run_s`, the engine's quiet runs):
    the verification from a per-batch-size `VerifyStep`, the drafter's passes from its own
    decode-step table; the same floats as a call, to the bit (tested)."""

    target: StepModel
    draft: StepModel
    spec: SpeculativeDecoding
    # verification steps by number of sequences, but for their attention (a cache)
    _verify: dict[int, VerifyStep] = field(init=False, repr=False, compare=False)
    # the last decode step's (sequences, context, draft pass prices): the next step of the
    # same batch reads n more keys, so its pass i is that step's pass i + 1 (one slot,
    # replaced whole: a thread reading it sees one step's prices or another's)
    _last: list[tuple[int, int, tuple[float, ...]]] = field(init=False, repr=False, compare=False)
    _passes: int = field(init=False, repr=False, compare=False)
    # the drafter's pass over a step's prompt chunks, by the chunks (`_prompt_pass_s`)
    _prompts: dict[tuple[PrefillChunkLike, ...], float] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "_verify", {})
        object.__setattr__(self, "_prompts", {})
        object.__setattr__(self, "_last", [(0, 0, ())])
        object.__setattr__(self, "_passes", self.num_draft_passes)

    def __reduce__(
        self,
    ) -> tuple[type[SpeculativeStepCost], tuple[StepModel, StepModel, SpeculativeDecoding]]:
        """Pickled by its fields, the cache rebuilt (as `StepModel`)."""
        return (SpeculativeStepCost, (self.target, self.draft, self.spec))

    @property
    def num_draft_passes(self) -> int:
        return self.spec.num_draft_passes or self.spec.num_speculative_tokens

    def decode_step_s(self, num_decode_seqs: int, num_decode_context_tokens: int) -> float:
        """`self(batch)` for `num_decode_seqs` > 0 decoding sequences reading
        `num_decode_context_tokens` keys and no prompt work, to the bit, without a batch;
        the drafter's passes the step before priced are not priced again (`_last`)."""
        n, context = num_decode_seqs, num_decode_context_tokens
        verify = self._verify.get(n) or self._verify_step(n)
        last_n, last_context, last = self._last[0]
        if last_n == n and last_context + n == context:  # `_draft_passes`' reuse, inline
            drafts = (*last[1:], self.draft.decode_step_s(n, context + (self._passes - 1) * n))
            self._last[0] = (n, context, drafts)
        else:
            drafts = self._draft_passes(n, context)
        drafting = 0.0
        for d in drafts:  # `draft_time_s`'s sum, in its order
            drafting += d
        return verify.time_s(context) + drafting

    def _draft_passes(self, n: int, context: int) -> tuple[float, ...]:
        """The drafter's decode passes over `n` > 0 sequences reading `context` keys: pass i
        reads i x n more; those the step before priced are not priced again (`_last`)."""
        passes, draft = self._passes, self.draft.decode_step_s
        last_n, last_context, last = self._last[0]
        if last_n == n and last_context + n == context:
            drafts = (*last[1:], draft(n, context + (passes - 1) * n))
        else:
            drafts = tuple([draft(n, context + i * n) for i in range(passes)])
        self._last[0] = (n, context, drafts)
        return drafts

    def decode_run_s(
        self, num_decode_seqs: int, num_decode_context_tokens: int, num_steps: int
    ) -> np.ndarray:
        """`decode_step_s` of `num_steps` decode-only steps in a row, the batch unchanged
        (each reads `num_decode_seqs` more keys than the one before), as an array: step j's
        draft pass i reads what step j + i's first pass does, so the drafter's passes of
        the whole run are one run of its decode steps, summed in windows."""
        n, context, passes = num_decode_seqs, num_decode_context_tokens, self.num_draft_passes
        verify = self._verify.get(n) or self._verify_step(n)
        drafts = self.draft.decode_run_s(n, context, num_steps + passes - 1)
        drafting = drafts[:num_steps]
        for i in range(1, passes):
            drafting = drafting + drafts[i : i + num_steps]
        contexts = context + n * np.arange(num_steps, dtype=np.int64)
        return verify.times_s(contexts) + drafting

    def _verify_step(self, n: int) -> VerifyStep:
        t, spec = self.target, self.spec
        k = spec.num_speculative_tokens
        v = verify_step(
            t.constants, n, k, t.cuda_graphs, spec.graphed_verify, spec.serial_host,
            spec.state_kernel_rate,
        )  # fmt: skip
        self._verify[n] = v
        return v

    def __call__(self, batch: BatchLike) -> float:
        if batch.num_decode_seqs and not batch.prefill_chunks:  # decode only, as `StepModel`
            return self.decode_step_s(batch.num_decode_seqs, batch.num_decode_context_tokens)
        verify = step_time_s(self.target.constants, self._verify_terms(batch))
        return verify + self._host_s(batch.num_decode_seqs) + self.draft_time_s(batch)

    def _host_s(self, num_decode_seqs: int) -> float:
        """The verify step's per-request host work serial with the GPU (`serial_host`)."""
        if not self.spec.serial_host:
            return 0.0
        return verify_sequence_s(self.target.constants, num_decode_seqs)

    def _verify_terms(self, batch: BatchLike) -> Terms:
        c, k = self.target.constants, self.spec.num_speculative_tokens
        a = aggregate(batch, c.window)
        terms = step_terms(c, verify_aggregates(a, k, c.window))
        terms = with_verify_state(c, terms, batch.num_decode_seqs, k, self.spec.state_kernel_rate)
        if not self.spec.graphed_verify:
            return terms
        return graphed_verify_terms(c, a, terms, self.target.cuda_graphs)

    def draft_time_s(self, batch: BatchLike) -> float:
        """The drafter's passes over the decoding sequences, plus its pass over new prompt
        tokens (a draft model keeps its own KV; a head reads the target's features): the
        prices of `_draft_batches`, summed in their order, without building the decode ones."""
        n = batch.num_decode_seqs
        drafting = 0.0
        for d in self._draft_passes(n, batch.num_decode_context_tokens) if n else ():
            drafting += d
        if batch.prefill_chunks:
            drafting += self._prompt_pass_s(tuple(batch.prefill_chunks))
        return drafting

    def _prompt_pass_s(self, chunks: tuple[PrefillChunkLike, ...]) -> float:
        """The drafter's pass over `chunks` (`self.draft(_Prompts(chunks))`), kept by the
        chunks, whose shapes alone set it: a run's prompts come in few lengths and chunks
        (a quarter of a speculating step with prompt work was this pass, issue 11). The
        simulator's chunks are named tuples, equal by value; at most `_PROMPT_PASSES` kept."""
        price = self._prompts.get(chunks)
        if price is None:
            if len(self._prompts) >= _PROMPT_PASSES:
                self._prompts.clear()
            price = self._prompts[chunks] = self.draft(_Prompts(chunks))
        return price

    def measure(self, batch: BatchLike) -> tuple[float, float, float]:
        """(seconds, FLOPs, HBM bytes) as `StepModel.measure`, verification and drafting
        both counted."""
        c = self.target.constants
        terms = self._verify_terms(batch)
        time_s = step_time_s(c, terms) + self._host_s(batch.num_decode_seqs)
        flops = memory = 0.0
        for i, (flops_per_s, bytes_per_s) in enumerate(self.target.part_rates):
            flops += terms[2 * i] * flops_per_s
            memory += terms[2 * i + 1] * bytes_per_s
        memory += terms[_ELEMENTWISE] * c.gemm_bytes_per_s
        for b in self._draft_batches(batch):
            s, f, m = self.draft.measure(b)
            time_s, flops, memory = time_s + s, flops + f, memory + m
        return time_s, flops, memory

    def _draft_batches(self, batch: BatchLike) -> list[BatchShape]:
        b, context = batch.num_decode_seqs, batch.num_decode_context_tokens
        passes = self.num_draft_passes
        out = [
            BatchShape(num_decode_seqs=b, num_decode_context_tokens=context + i * b)
            for i in range(passes if b else 0)
        ]
        if batch.prefill_chunks:
            chunks = tuple(
                ChunkShape(ch.num_new_tokens, ch.num_context_tokens) for ch in batch.prefill_chunks
            )
            out.append(BatchShape(prefill_chunks=chunks))
        return out
