"""Scenario files: YAML in, validated frozen models out, errors that name the key and value.

A scenario is what `llmsizer simulate` runs:

    name: notebook-static              # optional, for reports
    workload: {arrival: burst, num_requests: 100, isl: 1000, osl: 100}
    engine:   {batching: static, max_num_seqs: 4}
    step_cost: {kind: fixed, step_time_ms: 10}
    slo:      {ttft_ms: 500, tpot_ms: 50}   # optional: goodput
    num_gpus: 1                          # per-GPU throughput normalisation

Every key is optional; unknown keys are errors. CLI flags override the file's values.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from llmsizer.errors import format_validation_error, read_yaml_mapping
from llmsizer.instance import DeploymentSpec, HardwareSpec, make_instance
from llmsizer.instance.speculation import SpeculativeEngine, kv_fraction_of, step_cost_of
from llmsizer.metrics import Slo
from llmsizer.perf import EfficiencyFactors
from llmsizer.sim import Engine, EngineConfig, FixedTicks, LinearStepCost, StepCost
from llmsizer.sizing.inputs import usecase_from_mapping
from llmsizer.sizing.usecase import UseCase
from llmsizer.units import MS
from llmsizer.workload import Workload, WorkloadSpec


class ConfigError(ValueError):
    """A user's file or flags are invalid; the message says where and what is allowed."""


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class FixedStepCostSpec(_Strict):
    """The course notebook's model: every step takes a fixed number of ticks."""

    kind: Literal["fixed"] = "fixed"
    step_time_ms: float = Field(10.0, gt=0, description="Length of one tick in ms.")
    prefill_ticks: int = Field(1, ge=1, description="Ticks a step with prompt work takes.")
    decode_ticks: int = Field(1, ge=1, description="Ticks a decode-only step takes.")

    def build(self) -> StepCost:
        return FixedTicks(self.step_time_ms * MS, self.prefill_ticks, self.decode_ticks)


class LinearStepCostSpec(_Strict):
    """step = base + per_prefill_token x prompt tokens + per_decode_seq x decodes
    + per_context_token x KV tokens read (all in ms)."""

    kind: Literal["linear"] = "linear"
    base_ms: float = Field(5.0, ge=0, description="Fixed cost of every step in ms.")
    per_prefill_token_ms: float = Field(0.0, ge=0, description="ms per prompt token computed.")
    per_decode_seq_ms: float = Field(0.0, ge=0, description="ms per decoding sequence.")
    per_context_token_ms: float = Field(
        0.0, ge=0, description="ms per KV-cache token read by attention."
    )

    def build(self) -> StepCost:
        return LinearStepCost(
            self.base_ms * MS,
            self.per_prefill_token_ms * MS,
            self.per_decode_seq_ms * MS,
            self.per_context_token_ms * MS,
        )


class GpuStepCostSpec(HardwareSpec):
    """The GPU performance model: a model on a GPU at a precision and parallelism (the
    deployment's fields, `llmsizer.instance.DeploymentSpec`; its engine is the scenario's).
    The KV cache's blocks come from the memory left after weights and activations."""

    kind: Literal["gpu"] = "gpu"
    calibration: Path | None = Field(
        None, description="Calibration file with fitted efficiency factors."
    )

    def deployment(self, engine: EngineConfig) -> DeploymentSpec:
        fields = self.model_dump(exclude={"kind", "calibration"})
        return DeploymentSpec.model_validate({**fields, "engine": engine})


class CalibratedStepCostSpec(_Strict):
    """A step cost fitted to measurements (`llmsizer calibrate`): the file's step cost, its
    first-token delay, and its batching settings for every engine key the scenario leaves
    unset."""

    kind: Literal["calibrated"] = "calibrated"
    calibration: Path = Field(description="Calibration file of kind fitted_step_cost.")


StepCostSpec = Annotated[
    FixedStepCostSpec | LinearStepCostSpec | GpuStepCostSpec | CalibratedStepCostSpec,
    Field(discriminator="kind"),
]


class SloSpec(_Strict):
    """Latency limits for goodput (vLLM --goodput); unset limits don't apply."""

    ttft_ms: float | None = Field(None, gt=0, description="Time-to-first-token limit in ms.")
    tpot_ms: float | None = Field(None, gt=0, description="Time-per-output-token limit in ms.")
    e2el_ms: float | None = Field(None, gt=0, description="End-to-end latency limit in ms.")

    def build(self) -> Slo:
        def s(v: float | None) -> float | None:
            return None if v is None else v * MS

        return Slo(ttft_s=s(self.ttft_ms), tpot_s=s(self.tpot_ms), e2el_s=s(self.e2el_ms))


class Scenario(_Strict):
    """Everything one simulation needs."""

    name: str = Field("default", description="A name for reports.")
    workload: WorkloadSpec = Field(
        default_factory=WorkloadSpec,
        description="The offered load: arrivals and lengths.",
    )
    engine: EngineConfig = Field(
        default_factory=EngineConfig,
        description="How the engine batches and how much KV cache it has.",
    )
    step_cost: StepCostSpec = Field(
        default_factory=FixedStepCostSpec,
        description="What one engine step costs: fixed ticks, a linear model, or a GPU.",
    )
    slo: SloSpec | None = Field(None, description="Latency limits for goodput.")
    num_gpus: int = Field(1, ge=1, description="GPUs per instance, for per-GPU throughput.")

    def build_engine(self, workload: Workload | None = None) -> Engine | SpeculativeEngine:
        """The engine this scenario describes, its step cost and (for a GPU) its KV blocks;
        for a GPU, a ValueError when a request of `workload` exceeds the model's context."""
        cost = self.step_cost
        if isinstance(cost, CalibratedStepCostSpec):
            return self._calibrated_engine(cost.calibration)
        if not isinstance(cost, GpuStepCostSpec):
            return Engine(self.engine, cost.build())
        inst = make_instance(
            cost.deployment(self.engine), efficiency=load_efficiency(cost.calibration)
        )
        if workload is not None and workload.num_requests:
            lengths = workload.num_prompt_tokens + workload.num_output_tokens
            i = int(lengths.argmax())
            what = f"prompt + output of request {i} = {workload.num_prompt_tokens[i]} + "
            inst.check_request_tokens(int(lengths[i]), what + f"{workload.num_output_tokens[i]}")
        speculative = cost.speculative
        if speculative is None:
            return inst.simulator()
        step_cost = step_cost_of(speculative, inst.step, inst.engine.overlap_scheduler)
        engine = inst.simulator(step_cost=step_cost)
        share = kv_fraction_of(speculative, inst.step, inst.memory.kv_cache_bytes)
        return SpeculativeEngine(engine, speculative, share, self.workload.seed)

    def _calibrated_engine(self, path: Path) -> Engine:
        from llmsizer.calibrate.step_calibration import load_step_calibration

        cal = load_step_calibration(path)
        given = self.engine.model_dump(include=self.engine.model_fields_set)
        engine = EngineConfig.model_validate({**cal.engine.model_dump(), **given})
        return cal.build_engine(engine)

    @property
    def gpus_per_instance(self) -> int:
        cost = self.step_cost
        if isinstance(cost, GpuStepCostSpec):
            return cost.gpus_per_instance
        return self.num_gpus


def load_efficiency(path: Path | None) -> EfficiencyFactors | None:
    """Efficiency factors from a calibration file, or None for the built-in ones."""
    if path is None:
        return None
    from llmsizer.perf.calibrated import load_calibration

    return load_calibration(path)


def read_yaml(path: Path) -> dict[str, Any]:
    return read_yaml_mapping(path, "scenario file", empty_ok=True, error=ConfigError)


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """`override` wins; nested mappings merge key by key."""
    out = dict(base)
    for k, v in override.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def load_scenario(
    path: Path | None,
    overrides: dict[str, Any] | None = None,
    flags: Mapping[str, str] | None = None,
) -> Scenario:
    """Read a scenario file (or the defaults), apply flag overrides, validate everything.
    `flags` names the flag of each field path (`format_validation_error`)."""
    data = read_yaml(path) if path is not None else {}
    data = deep_merge(data, overrides or {})
    try:
        return Scenario.model_validate(data)
    except ValidationError as e:
        source = f"scenario '{path}'" if path is not None else "flags"
        raise ConfigError(format_validation_error(e, source, flags=flags)) from e


def load_usecase(
    path: Path | None,
    overrides: dict[str, Any] | None = None,
    flags: Mapping[str, str] | None = None,
) -> UseCase:
    """A sizing use case from a YAML file and/or flag overrides, validated as one. `flags`
    names the flag of each field path (`format_validation_error`)."""
    data = deep_merge(read_yaml(path) if path is not None else {}, overrides or {})
    try:
        return usecase_from_mapping(data, base_dir=path.parent if path is not None else None)
    except ValidationError as e:
        source = f"use case '{path}'" if path is not None else "flags"
        raise ConfigError(format_validation_error(e, source, flags=flags)) from e
