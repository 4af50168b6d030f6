"""Speculative decoding in the simulation: the engine counts verify steps, tokens follow.

A speculating engine's decode step drafts k tokens per sequence and verifies k + 1; a
sequence gains 1 + (accepted drafts) tokens. Acceptance differs between requests (prompts
differ in how predictable their answers are), so each request draws its own per-token
acceptance rate a_i from a Beta distribution with the spec's mean and standard deviation,
and needs

    steps_i = ceil((n_i - 1) / E(a_i)),   E(a) = (1 - a^(k+1)) / (1 - a)

decode steps for its n_i - 1 tokens after the first (Leviathan et al. 2023, eq. 1;
`perf.speculative`). The simulator runs that many decode steps per request, each priced by
`perf.speculative.SpeculativeStepCost` (k drafter passes plus verification of k + 1 tokens
per sequence, so the gain at small batch and the loss at large batch come from the step
model). Records are mapped back to tokens: a step's accepted tokens reach the client
together, as a streamed chunk does (vLLM streams them as one chunk), so TPOT is per token
and ITL has the zero gaps a client measures inside a chunk.

Memory: the drafter's weights (a one-layer head, or a draft model on the same GPUs) and its
KV (one layer's for a head; the draft model's per token) come out of the target's KV
budget, and k lookahead slots per sequence are reserved. The simulator grows a request's KV
by one token per step, so its blocks are scaled by the workload's simulated tokens over its
real ones: exact in the mean, not per request. Request i holds, real over simulated,

    rho_i(j) = (p_i + 1 + j E_i + k) / (p_i + 1 + j)    after j verify steps

(prompt p_i, k lookahead slots), monotone in j, so at most rho_i = the larger of its first
step's and its last's. Whatever requests are in flight, their real KV is at most
max_i rho_i times their simulated KV, which the engine keeps within the scaled capacity;
so the real KV in flight is at most `kv_overcommit_bound` = max_i rho_i / (the workload's
real over simulated tokens) times the real capacity. It is 1 when every request accepts
alike; with a spread of acceptance, a batch of many requests averages it out and stays
near 1 (tests/instance/test_speculation_kv.py measures both).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Self

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from llmsizer.perf import StepModel
from llmsizer.perf.memory import weight_bytes_per_gpu
from llmsizer.perf.moe_kernels import check_moe_backend
from llmsizer.perf.speculative import (
    SpeculativeDecoding,
    SpeculativeStepCost,
    draft_head_model,
    mtp_head_model,
)
from llmsizer.perf.verify_step import check_state_kernel, state_rate_of
from llmsizer.records import ChunkTable, RecordTable, RequestRecord, spread_chunks
from llmsizer.sim import Engine, EngineConfig, SimResult
from llmsizer.sim.engine import Progress
from llmsizer.specs import get_model
from llmsizer.workload import Workload

DEFAULT_ACCEPTANCE = 0.7  # EAGLE (Li et al. 2024, arXiv:2401.15077): 0.6-0.8 per token, MT-bench


class SpeculativeSpec(BaseModel):
    """Speculative decoding settings (vLLM's `--speculative-config`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    num_speculative_tokens: int = Field(ge=1, le=16, description="Tokens drafted per step (k).")
    method: Literal["head", "mtp", "draft_model"] = Field(
        "head",
        description="head: an EAGLE-style one-layer dense head on the target; mtp: the "
        "model's own MTP module, one decoder layer with its experts; draft_model: a smaller "
        "model from the catalog or a config.json (`draft_model`).",
    )
    draft_model: str | None = Field(None, description="The draft model (method draft_model).")
    acceptance_rate: float = Field(
        DEFAULT_ACCEPTANCE,
        gt=0,
        lt=1,
        description="Mean probability that a drafted token is accepted (EAGLE: 0.6-0.8).",
    )
    acceptance_std: float = Field(
        0.1, ge=0, lt=0.5, description="Spread of the per-request acceptance rate (Beta)."
    )
    draft_moe_backend: str | None = Field(
        None,
        description="The MTP head's routed-experts kernel where the engine runs it apart from "
        "the target's (`perf.moe_kernels` names; None: the target's). SGLang 0.5.9 runs the "
        "head's experts on its auto backend, Triton, when the target runs FlashInfer's "
        "TRT-LLM MoE (`ServerArgs._handle_speculative_decoding`).",
    )

    linear_verify_kernel: str | None = Field(
        None,
        description="The kernel that verifies a hybrid model's linear-attention layers where "
        "it moves their state slower than the fits' attention bandwidth (`perf.verify_step."
        "STATE_KERNEL_RATE` names; None: at it). SGLang 0.5.9 verifies Qwen3.5's Gated "
        "DeltaNet with FLA's Triton recurrent kernel on every GPU: triton.",
    )

    @model_validator(mode="after")
    def _draft(self) -> Self:
        if (self.method == "draft_model") != (self.draft_model is not None):
            raise ValueError("speculative: draft_model is given exactly when method is draft_model")
        if self.draft_model is not None:
            get_model(self.draft_model)  # UnknownNameError names close matches
        if self.draft_moe_backend is not None and self.method != "mtp":
            raise ValueError(
                f"speculative: draft_moe_backend is an MTP head's (method {self.method!r})"
            )
        check_moe_backend(self.draft_moe_backend)  # names the priced kernels
        check_state_kernel(self.linear_verify_kernel)  # names the priced kernels
        return self

    def label(self) -> str:
        return f"spec{self.num_speculative_tokens}" + (
            f"({self.draft_model})" if self.draft_model else ""
        )


def speculative_cost(
    spec: SpeculativeSpec, target: StepModel, overlap: bool = True
) -> SpeculativeStepCost:
    """The step cost of a speculating engine; a draft model must be smaller than the target.
    Without the `overlap` scheduler its verify steps' per-request host work is serial with
    the GPU (`SpeculativeDecoding.serial_host`)."""
    if spec.method == "mtp":
        draft = mtp_head_model(target, spec.draft_moe_backend)
    elif spec.draft_model is None:
        draft = draft_head_model(target)
    else:
        d = target.deployment
        model = get_model(spec.draft_model)
        if model.total_params >= d.model.total_params:
            raise ValueError(
                f"speculative.draft_model {model.name} ({model.total_params / 1e9:.1f} B "
                f"parameters) is not smaller than the target {d.model.name} "
                f"({d.model.total_params / 1e9:.1f} B): a draft must be cheaper to run"
            )
        draft_deployment = dataclasses.replace(d, model=model, pipeline_parallel_size=1)
        draft = StepModel(draft_deployment, target.efficiency)
    k, graphed = spec.num_speculative_tokens, spec.method == "mtp"
    decoding = SpeculativeDecoding(
        k,
        spec.acceptance_rate,
        graphed_verify=graphed,
        serial_host=not overlap,
        state_kernel_rate=state_rate_of(spec.linear_verify_kernel),
    )
    return SpeculativeStepCost(target, draft, decoding)


def acceptance_rates(spec: SpeculativeSpec, num: int, rng: np.random.Generator) -> np.ndarray:
    """Per-request acceptance rates: Beta with the spec's mean and standard deviation (its
    largest possible spread when the asked one is too wide for the mean)."""
    mean, std = spec.acceptance_rate, spec.acceptance_std
    if std == 0:
        return np.full(num, mean)
    var = min(std**2, 0.99 * mean * (1 - mean))
    concentration = mean * (1 - mean) / var - 1
    return rng.beta(mean * concentration, (1 - mean) * concentration, size=num)


def decode_steps(num_output: np.ndarray, acceptance: np.ndarray, k: int) -> np.ndarray:
    """Verify steps for each request's tokens after its first (module docstring)."""
    a = np.clip(acceptance, 0.0, 1.0 - 1e-12)
    per_step = (1.0 - a ** (k + 1)) / (1.0 - a)
    return np.ceil((num_output - 1) / per_step - 1e-9).astype(np.int64).clip(min=0)


def kv_overcommit_bound(
    num_prompt: np.ndarray, num_output: np.ndarray, steps: np.ndarray, k: int
) -> float:
    """The most the real KV in flight can exceed the capacity, as a factor (module
    docstring): requests of `num_prompt` and `num_output` tokens in `steps` verify steps."""
    simulated = num_prompt + 1 + steps
    real = num_prompt + num_output + k
    first = (num_prompt + 1 + k) / (num_prompt + 1)
    worst = np.maximum(first, real / simulated).max()
    return float(worst * simulated.sum() / real.sum())


def kv_share(spec: SpeculativeSpec, cost: SpeculativeStepCost, kv_cache_bytes: float) -> float:
    """Fraction of the target's KV cache left once the drafter's weights and KV are in it."""
    target, draft = cost.target.deployment, cost.draft.deployment
    extra_weights = weight_bytes_per_gpu(draft) if spec.draft_model else 0.0
    draft_ratio = draft.kv_bytes_per_token_per_gpu / target.kv_bytes_per_token_per_gpu
    left = max(0.0, kv_cache_bytes - extra_weights) / kv_cache_bytes if kv_cache_bytes else 0.0
    return left / (1.0 + draft_ratio)


@dataclass(frozen=True, slots=True)
class InSteps:
    """A speculating run set up in steps (`in_steps`): the engine, its KV blocks scaled, and
    the workload of verify steps; `in_tokens` maps its records back. A request's first and
    last token times are its first and last step's, so its TTFT and E2E are known in steps
    (what an early stop reads: `sizing.early_stop`)."""

    engine: Engine
    workload: Workload
    num_output: np.ndarray  # each request's real output tokens

    def in_tokens(self, records: Sequence[RequestRecord]) -> ChunkTable:
        """`records` of this run's requests (a `RecordTable`, the engine's) in tokens: the
        same table, each step a chunk of tokens (`_in_tokens`'s rule), which a probe
        summarises in O(steps), not O(tokens) (issue 11)."""
        assert isinstance(records, RecordTable)
        return chunk_table(records, self.num_output)


def chunk_table(records: RecordTable, num_output: np.ndarray) -> ChunkTable:
    """`records` of a run in verify steps whose requests have `num_output` tokens (by
    request id) as a `ChunkTable`: each step a chunk of tokens, by `_in_tokens`'s rule."""
    num_output = num_output[records.request_id]
    times = records.num_output_tokens  # a request's first step's, then each step's
    num_tokens = np.where((times > 1) & (num_output > 1), num_output, times)
    fields = {f.name: getattr(records, f.name) for f in dataclasses.fields(records)}
    fields["num_output_tokens_requested"] = num_output
    return ChunkTable(**fields, num_tokens=num_tokens)


def in_steps(
    engine: Engine,
    workload: Workload,
    spec: SpeculativeSpec,
    kv_fraction: float,
    rng: np.random.Generator,
) -> InSteps:
    """`workload` on a speculating `engine` (its step cost a `SpeculativeStepCost`) as a run
    of verify steps, `kv_fraction` of its blocks left to the target (module docstring)."""
    k = spec.num_speculative_tokens
    prompt, output = workload.num_prompt_tokens, workload.num_output_tokens
    steps = decode_steps(output, acceptance_rates(spec, workload.num_requests, rng), k)
    simulated = 1 + steps
    cfg = engine.config
    if cfg.num_gpu_blocks is not None:
        ratio = float((prompt + simulated).sum()) / float((prompt + output + k).sum())
        blocks = max(1, math.floor(cfg.num_gpu_blocks * kv_fraction * ratio))
        cfg = cfg.model_copy(update={"num_gpu_blocks": blocks})
    in_steps = dataclasses.replace(workload, num_output_tokens=simulated)
    return InSteps(dataclasses.replace(engine, config=cfg), in_steps, output)


def run_speculative(
    engine: Engine,
    workload: Workload,
    spec: SpeculativeSpec,
    kv_fraction: float,
    rng: np.random.Generator,
    progress: Progress | None = None,
) -> SimResult:
    """Run `workload` on a speculating `engine` (its step cost a `SpeculativeStepCost`),
    `kv_fraction` of its blocks left to the target; records in tokens (module docstring)."""
    run = in_steps(engine, workload, spec, kv_fraction, rng)
    result = run.engine.run(run.workload, progress)
    table = result.records
    assert isinstance(table, RecordTable)
    records = _in_tokens(table, run.num_output[table.request_id])
    return dataclasses.replace(result, records=records)


def _in_tokens(table: RecordTable, num_output: np.ndarray) -> list[RequestRecord]:
    """Records of steps as records of `num_output` tokens each, for a whole table at once:
    each step's tokens arrive at the step's end, the n - 1 tokens after the first spread as
    evenly as they divide over the s steps (step j has delivered round(j (n - 1) / s) of
    them; records of one step or one token are left as they were)."""
    lengths = table.num_output_tokens  # steps + 1
    total = int(lengths.sum())
    first = np.cumsum(lengths) - lengths  # each record's offset among all its times
    within = np.arange(total) - np.repeat(first, lengths)  # j, a step's index in its record
    times = table.token_buffer[np.repeat(table.token_start, lengths) + within]
    if table.first_token_delay_s > 0:  # the client's times, as `RecordTable.token_times_s`
        times = np.maximum(times, np.repeat(times[first] + table.first_token_delay_s, lengths))
    expanded, counts = spread_chunks(times, lengths, within, num_output)
    ends = np.cumsum(np.add.reduceat(counts, first)).tolist() if total else []
    starts = [0, *ends[:-1]] if ends else []
    columns = zip(
        table.request_id.tolist(),
        table.arrival_s.tolist(),
        table.num_prompt_tokens.tolist(),
        num_output.tolist(),
        table.scheduled_s.tolist(),
        table.finish_s.tolist(),
        table.num_cached_tokens.tolist(),
        table.num_preemptions.tolist(),
        starts,
        ends,
        strict=True,
    )
    return [
        RequestRecord(i, arrival, prompt, out, expanded[a:b], sched, finish, cached, preempt)
        for i, arrival, prompt, out, sched, finish, cached, preempt, a, b in columns
    ]


def record_in_tokens(record: RequestRecord, num_output: int) -> RequestRecord:
    """One record of verify steps (a fleet's, kept with its instance) as a record of
    `num_output` tokens, by `_in_tokens`'s rule (`records.spread_chunks`)."""
    times, n = record.token_times_s, len(record.token_times_s)
    if n:
        times, _ = spread_chunks(times, np.array([n]), np.arange(n), np.array([num_output]))
    return dataclasses.replace(record, num_output_tokens_requested=num_output, token_times_s=times)


def step_cost_of(
    spec: SpeculativeSpec | None, step: StepModel, overlap: bool = True
) -> StepModel | SpeculativeStepCost:
    """The instance's step cost: its step model, or the speculating engine's (`overlap`: its
    engine's `overlap_scheduler`, `speculative_cost`)."""
    return step if spec is None else speculative_cost(spec, step, overlap)


def run_instance(
    engine: Engine,
    workload: Workload,
    spec: SpeculativeSpec | None,
    kv_fraction: float = 1.0,
    seed: int = 0,
) -> SimResult:
    """Run `workload` on `engine` (its step cost from `step_cost_of`), speculating when
    `spec` is set, with `kv_fraction` (`kv_fraction_of`) of the blocks left to the target."""
    if spec is None:
        return engine.run(workload)
    return run_speculative(engine, workload, spec, kv_fraction, np.random.default_rng(seed))


def kv_fraction_of(spec: SpeculativeSpec | None, step: StepModel, kv_cache_bytes: float) -> float:
    """`kv_share` of an instance's step model and KV cache bytes (1 without speculation)."""
    if spec is None:
        return 1.0
    return kv_share(spec, speculative_cost(spec, step), kv_cache_bytes)


def tokens_per_step(spec: SpeculativeSpec | None) -> float:
    """Mean tokens a decode step yields per sequence (1 without speculation)."""
    if spec is None:
        return 1.0
    return SpeculativeDecoding(
        spec.num_speculative_tokens, spec.acceptance_rate
    ).expected_tokens_per_step


@dataclass(frozen=True, slots=True)
class SpeculativeEngine:
    """An `Engine` whose step cost is a `SpeculativeStepCost`, run as `run_speculative`
    (what `simulate` builds for a scenario that speculates)."""

    engine: Engine
    spec: SpeculativeSpec
    kv_fraction: float
    seed: int = 0

    @property
    def config(self) -> EngineConfig:
        return self.engine.config

    def run(self, workload: Workload, progress: Progress | None = None) -> SimResult:
        rng = np.random.default_rng(self.seed)
        return run_speculative(self.engine, workload, self.spec, self.kv_fraction, rng, progress)
