"""`make_instance`: the one join of the performance model and the simulator.

A `DeploymentSpec` names a model, a GPU, parallelism, precisions and an engine; its
`Instance` holds the three things a priced simulation needs: the step cost (the GPU
performance model), the KV blocks left after weights and activations (the memory plan), and
the engine's batching knobs with those blocks filled in.

Pipeline parallelism runs `pp` batches in flight (vLLM's virtual engines): each virtual engine
holds 1/pp of the KV blocks and of the batch slots, its steps the full pipeline's latency.

Attention data parallelism (`attention_dp_size` D) is simulated as one engine for all D
ranks: the engine settings are each rank's (its `max_num_seqs`, `max_num_batched_tokens`
and KV blocks, as each rank's scheduler has them), so the engine gets D times each, and the
step model prices the busiest rank's share of every batch (`llmsizer.perf.step`).

The step model runs steps as the engine's CUDA graphs do (`llmsizer.perf.cuda_graphs`, from
the engine config's `cudagraph_*` fields and the preset's defaults): padded to captured sizes,
or eager past them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from llmsizer.instance.deployment import DeploymentSpec
from llmsizer.instance.speculation import SpeculativeSpec
from llmsizer.perf import Deployment, EfficiencyFactors, MemoryPlan, StepModel, plan_memory
from llmsizer.perf.calibrated import calibrated_efficiency, packaged_calibration
from llmsizer.perf.cuda_graphs import capture_plan
from llmsizer.perf.launches import ENGINE_INPUT_QUANT
from llmsizer.perf.memory import ENGINE_MEMORY_RULES, MemoryRule
from llmsizer.perf.moe_comm import engine_a2a_backend
from llmsizer.perf.sparsity import StructuredSparsity
from llmsizer.sim import Engine, EngineConfig, StepCost
from llmsizer.specs import ModelSpec, get_gpu


@dataclass(frozen=True, slots=True)
class Instance:
    """A deployable replica: its spec, step model, memory plan and engine configuration
    (KV blocks filled in)."""

    spec: DeploymentSpec
    step: StepModel
    memory: MemoryPlan
    engine: EngineConfig

    @property
    def deployment(self) -> Deployment:
        """The resolved hardware and model the step model prices."""
        return self.step.deployment

    @property
    def num_gpus(self) -> int:
        return self.deployment.num_gpus

    @property
    def first_token_delay_s(self) -> float:
        """The front end's hold on each stream's first chunk, this model's: the efficiency
        factors' `first_token_hold_s` (the MoE hold added for a model with routed experts)."""
        return self.step.efficiency.first_token_hold_s(self.deployment.model.moe is not None)

    def simulator(
        self, config: EngineConfig | None = None, step_cost: StepCost | None = None
    ) -> Engine:
        """A simulated engine of this instance: `config` (default: its own engine config),
        `step_cost` (default: its step model; a metered or speculating wrapper of it) and its
        front end's first-token delay."""
        step = self.step if step_cost is None else step_cost
        return Engine(config or self.engine, step, self.first_token_delay_s)

    def check_request_tokens(self, num_tokens: int, what: str) -> None:
        """`check_context` for this instance's model."""
        check_context(self.deployment.model, num_tokens, what)

    def virtual_engine(self) -> EngineConfig:
        """One of the `pp` virtual engines (module docstring); the engine itself at pp 1."""
        return virtual_engine(self.engine, self.spec.pipeline_parallel_size)


def make_instance(
    spec: DeploymentSpec,
    *,
    max_model_len: int | None = None,
    efficiency: EfficiencyFactors | None = None,
) -> Instance:
    """Look names up, size the KV cache and return the instance.

    The engine config's `num_gpu_blocks`, when unset, becomes the blocks that fit. With
    pipeline parallelism each stage holds its share of layers, so the blocks counted are
    per stage: every stage holds the KV of every running sequence for its layers.
    `efficiency` defaults to the factors fitted on the published measurements for the
    spec's engine preset on its GPU's architecture (`calibrated_efficiency`).
    Raises `UnknownNameError` or `DoesNotFitError` with a message for the user.
    """
    engine = spec.engine
    deployment = Deployment.from_names(
        spec.model,
        spec.gpu,
        precision=spec.precision,
        kv_cache_dtype=spec.kv_cache_dtype,
        tensor_parallel_size=spec.tensor_parallel_size,
        pipeline_parallel_size=spec.pipeline_parallel_size,
        sparsity=StructuredSparsity() if spec.sparsity else None,
        expert_parallel_size=spec.expert_parallel_size,
        attention_dp_size=spec.attention_dp_size,
        moe_backend=spec.moe_backend,
        mamba_ssm_cache_dtype=spec.mamba_ssm_cache_dtype,
        moe_a2a_backend=spec.moe_a2a_backend,
        linear_kernel=spec.linear_kernel,
    )
    if spec.moe_a2a_backend is None:
        deployment = _with_engine_a2a(spec.preset, deployment)
    if quantised := ENGINE_INPUT_QUANT.get(spec.preset):  # its linears' input quantisation
        deployment = replace(deployment, separate_input_quant=quantised)
    if spec.separate_gdn_projections:  # Gated DeltaNet's four GEMMs (`perf.launches`)
        deployment = replace(deployment, separate_gdn_projections=True)
    memory = plan_memory(
        deployment,
        gpu_memory_utilization=spec.gpu_memory_utilization,
        block_size=engine.block_size,
        max_num_batched_tokens=engine.max_num_batched_tokens,
        max_num_seqs=engine.max_num_seqs,
        max_model_len=max_model_len,
        rule=ENGINE_MEMORY_RULES.get(spec.preset, MemoryRule.TOTAL),
        num_state_slots=_state_slots(spec.preset, engine, spec.speculative),
    )
    graphs = capture_plan(
        spec.preset,
        mode=engine.cudagraph_mode,
        capture_sizes=engine.cudagraph_capture_sizes,
        max_capture_size=engine.max_cudagraph_capture_size,
        padding=engine.cudagraph_padding,
        max_num_seqs=engine.max_num_seqs,
        max_num_batched_tokens=engine.max_num_batched_tokens,
        gpu_memory_bytes=deployment.gpu.memory_bytes,
        tensor_parallel_size=spec.tensor_parallel_size,
    )  # one rank's settings: before `_all_ranks`
    if engine.num_gpu_blocks is None:
        engine = engine.model_copy(update={"num_gpu_blocks": memory.num_kv_blocks})
    if spec.attention_dp_size > 1:  # every rank's settings (module docstring)
        engine = _all_ranks(engine, spec.attention_dp_size)
    if efficiency is None:
        efficiency = calibrated_efficiency(spec.preset, deployment.gpu.architecture)
    step = StepModel(deployment, efficiency, graphs)
    return Instance(spec=spec, step=step, memory=memory, engine=engine)


def _with_engine_a2a(engine: str, d: Deployment) -> Deployment:
    """`d` with the MoE token exchange its engine picks where the spec names none
    (`perf.moe_comm.engine_a2a_backend`)."""
    moe = d.model.moe
    name = engine_a2a_backend(
        engine,
        nvlink_domain=d.gpu.scale_up_domain_size,
        attention_dp_size=d.attention_dp_size,
        expert_parallel_size=d.expert_parallel_size,
        moe_world_size=d.moe_world_size,
        top_k=0 if moe is None else moe.num_experts_per_tok,
    )
    return d if name is None else replace(d, moe_a2a_backend=name)


def calibrated_for(spec: DeploymentSpec) -> EfficiencyFactors:
    """The shipped factors for `spec`'s engine preset on its GPU's architecture: what
    `make_instance` uses when given none."""
    return calibrated_efficiency(spec.preset, get_gpu(spec.gpu).architecture)


DEFAULT_UNCERTAINTY = 0.15  # where no cross-validated error is shipped


def measured_uncertainty(spec: DeploymentSpec) -> tuple[float, str]:
    """How far the shipped fit for `spec` is typically off, as a fraction, and where that
    figure comes from: the mean of the leave-one-model-out median absolute errors of TTFT
    and TPOT for its engine and GPU architecture (`bench/fit_aic.py`), else 0.15 (a prior).
    Leaving a model out is a plan's situation: a model the fit has not seen, on GPUs it has
    (the fit ships only for architectures it saw)."""
    architecture = get_gpu(spec.gpu).architecture
    calibration = packaged_calibration(spec.preset, architecture)
    held = calibration.fitted_on.get("leave_one_model_out")
    if not isinstance(held, dict) or not held:
        return DEFAULT_UNCERTAINTY, "a prior: no cross-validated error for this engine and GPU"
    errors = [float(m["median_ape_pct"]) / 100 for m in held.values()]
    value = min(0.9, sum(errors) / len(errors))
    return value, (
        f"the median error of the shipped fit for {spec.preset} on {architecture} GPUs, "
        "cross-validated leaving each model out"
    )


def check_context(model: ModelSpec, num_tokens: int, what: str) -> None:
    """A ValueError unless a request of `num_tokens` (`what`: "isl + osl = 1000 + 100") fits
    `model`'s context window (max_position_embeddings), as vLLM refuses it otherwise."""
    window = model.max_position_embeddings
    if window is not None and num_tokens > window:
        raise ValueError(
            f"{what} = {num_tokens} tokens exceed {model.name}'s context window of "
            f"{window} tokens (max_position_embeddings)"
        )


def virtual_engine(cfg: EngineConfig, pp: int) -> EngineConfig:
    """One of `pp` virtual engines: its share of the KV blocks and of the batch cap."""
    if pp == 1:
        return cfg
    blocks = max(1, (cfg.num_gpu_blocks or 0) // pp)
    seqs = max(1, cfg.max_num_seqs // pp)
    return cfg.model_copy(update={"num_gpu_blocks": blocks, "max_num_seqs": seqs})


def _all_ranks(cfg: EngineConfig, dp: int) -> EngineConfig:
    """One engine for `dp` attention data-parallel ranks of `cfg` each."""
    return cfg.model_copy(
        update={
            "num_gpu_blocks": (cfg.num_gpu_blocks or 0) * dp,
            "max_num_seqs": cfg.max_num_seqs * dp,
            "max_num_batched_tokens": cfg.max_num_batched_tokens * dp,
            "num_attention_dp_ranks": dp,
        }
    )


def _state_slots(preset: str, engine: EngineConfig, speculative: SpeculativeSpec | None) -> int:
    """Sequences' linear-attention states the engine sets aside before its KV cache: SGLang
    with the radix cache off, `max_running_requests` (`perf.memory`), and when speculating
    k + 1 more each, the state after every draft position of a verify step (0.5.9
    `handle_max_mamba_cache`: `mamba_cache_per_req x max_running_requests x
    speculative_num_draft_tokens`, k + 1 at top-k 1). Not modelled: SGLang's split with the
    radix cache on (`mamba_full_memory_ratio`), vLLM's states paged in its KV pool."""
    if preset != "sglang":
        return 0
    drafts = 0 if speculative is None else speculative.num_speculative_tokens + 1
    return (
        0 if engine.enable_prefix_caching else engine.max_num_seqs
    ) + engine.max_num_seqs * drafts
