"""`predict`: the course's core question for one configuration, answered by simulation.

Given a model, a GPU, parallelism, precision, lengths and a load (a closed loop at a
concurrency, Poisson arrivals at a rate, or offline: everything at once), simulate the
engine priced by the performance model long enough for steady state and report the
vLLM-style summary, per instance and per GPU, plus MBU and MFU.

Several instances (`num_gpus` a multiple of tp x pp: data parallelism) share the load
evenly. Pipeline parallelism runs `pp` batches in flight (vLLM's virtual engines). Both are
simulated as one of `instances x pp` identical engines, each with its share of the load
(1/pp of an instance's KV blocks and batch slots for a virtual engine) and steps that take
the full pipeline latency; throughputs are scaled back up by that count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, Self

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from llmsizer.metrics import summarize
from llmsizer.perf import EfficiencyFactors, StepModel
from llmsizer.sim import Batch, Engine, EngineConfig
from llmsizer.sizing.instance import Instance, make_instance
from llmsizer.workload import Workload

THROUGHPUT_KEYS = ("request_throughput", "output_throughput", "total_token_throughput")


class PredictSpec(BaseModel):
    """One configuration and load to predict (a row of `llmsizer predict --cases`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(description="Catalog name, Hugging Face id, or path to a config.json.")
    gpu: str = Field(description="GPU name, e.g. h100-sxm, H200, l40s.")
    precision: str = Field(
        "bf16", description="Weights and math: bf16, fp16, fp8, int8, int4, fp4."
    )
    kv_precision: str | None = Field(
        None, description="KV-cache precision (vLLM --kv-cache-dtype); unset: as precision."
    )
    tp: int = Field(1, ge=1, description="Tensor-parallel size (GPUs per pipeline stage).")
    pp: int = Field(1, ge=1, description="Pipeline-parallel size (stages).")
    num_gpus: int | None = Field(
        None, ge=1, description="GPUs in all: a multiple of tp x pp (data-parallel instances)."
    )
    isl: int = Field(ge=1, description="Prompt tokens per request.")
    osl: int = Field(ge=1, description="Output tokens per request.")
    concurrency: int | None = Field(None, ge=1, description="Closed-loop requests in flight.")
    request_rate: float | None = Field(None, gt=0, description="Poisson arrival rate, req/s.")
    offline: bool = Field(False, description="All requests at once: max-throughput benchmark.")
    engine: Literal["vllm", "trtllm", "sglang"] = Field("vllm", description="Engine preset.")
    num_requests: int | None = Field(
        None, ge=1, description="Requests simulated; default: enough for steady state."
    )
    max_num_seqs: int | None = Field(None, ge=1, description="Override the preset's batch cap.")
    max_num_batched_tokens: int | None = Field(
        None, ge=1, description="Override the preset's step token budget."
    )
    gpu_memory_utilization: float = Field(
        0.9, gt=0, le=1, description="Fraction of GPU memory the engine may use."
    )
    sparsity: bool = Field(False, description="2:4 structured sparsity of the weights.")
    seed: int = Field(0, ge=0, description="Seed for Poisson arrivals.")

    @model_validator(mode="after")
    def _one_load(self) -> Self:
        given = [self.concurrency is not None, self.request_rate is not None, self.offline]
        if sum(given) != 1:
            raise ValueError("give exactly one load: concurrency, request_rate, or offline")
        if self.num_gpus is not None and self.num_gpus % (self.tp * self.pp):
            raise ValueError(
                f"num_gpus={self.num_gpus} is not a multiple of tp x pp = {self.tp * self.pp}"
            )
        return self

    @property
    def gpus_per_instance(self) -> int:
        return self.tp * self.pp

    @property
    def num_instances(self) -> int:
        return (self.num_gpus or self.gpus_per_instance) // self.gpus_per_instance

    @property
    def total_gpus(self) -> int:
        return self.num_instances * self.gpus_per_instance


@dataclass(frozen=True, slots=True)
class Prediction:
    spec: PredictSpec
    summary: dict[str, float]
    mbu: float
    mfu: float
    num_kv_blocks: int
    max_num_kv_tokens: int
    weight_bytes_per_gpu: float

    def row(self) -> dict[str, Any]:
        """Flat dict for CSV/JSON: the spec, then the summary, then utilisation."""
        return {
            **self.spec.model_dump(),
            "num_gpus": self.spec.total_gpus,
            "num_instances": self.spec.num_instances,
            **self.summary,
            "mbu": self.mbu,
            "mfu": self.mfu,
            "num_kv_blocks": self.num_kv_blocks,
            "max_num_kv_tokens": self.max_num_kv_tokens,
            "weight_gb_per_gpu": self.weight_bytes_per_gpu / 1e9,
        }


class _Metered:
    """A step cost that also sums FLOPs, bytes and time for MBU/MFU over every
    `sample_every`-th step (a ratio estimate: the breakdown costs ~10x a plain call)."""

    def __init__(self, step: StepModel, sample_every: int = 8) -> None:
        self.step = step
        self.sample_every = sample_every
        self.num_calls = 0
        self.flops = 0.0
        self.bytes = 0.0
        self.time_s = 0.0

    def __call__(self, batch: Batch) -> float:
        self.num_calls += 1
        if self.num_calls % self.sample_every:
            return self.step(batch)
        b = self.step.breakdown(batch)
        self.flops += b.flops
        self.bytes += b.hbm_bytes
        self.time_s += b.time_s
        return b.time_s


def _engine_config(spec: PredictSpec) -> EngineConfig:
    overrides: dict[str, Any] = {
        "engine": spec.engine,
        "max_num_seqs": spec.max_num_seqs,
        "max_num_batched_tokens": spec.max_num_batched_tokens,
    }
    return EngineConfig.model_validate({k: v for k, v in overrides.items() if v is not None})


def _num_requests(spec: PredictSpec, max_batch: int) -> int:
    """Enough requests that ramp-up and drain are a small part of the run."""
    if spec.num_requests is not None:
        return spec.num_requests
    if spec.concurrency is not None:
        return max(4 * spec.concurrency, 32)
    if spec.offline:
        return max(4 * max_batch, 256)
    return 1000


def _workload(spec: PredictSpec, n: int, num_engines: int) -> Workload:
    """One simulated engine's share of the load."""
    isl = np.full(n, spec.isl, dtype=np.int64)
    osl = np.full(n, spec.osl, dtype=np.int64)
    if spec.concurrency is not None:
        return Workload(isl, osl, concurrency=max(1, math.ceil(spec.concurrency / num_engines)))
    if spec.offline:
        return Workload(isl, osl, arrival_s=np.zeros(n))
    assert spec.request_rate is not None
    rng = np.random.default_rng(spec.seed)
    gaps = rng.exponential(num_engines / spec.request_rate, n)
    gaps[0] = 0.0
    return Workload(isl, osl, arrival_s=np.cumsum(gaps))


def build(spec: PredictSpec, efficiency: EfficiencyFactors | None = None) -> Instance:
    return make_instance(
        spec.model,
        spec.gpu,
        precision=spec.precision,
        kv_cache_dtype=spec.kv_precision,
        tensor_parallel_size=spec.tp,
        pipeline_parallel_size=spec.pp,
        engine=_engine_config(spec),
        gpu_memory_utilization=spec.gpu_memory_utilization,
        max_model_len=spec.isl + spec.osl,
        efficiency=efficiency,
        sparsity=spec.sparsity,
    )


def virtual_engine(cfg: EngineConfig, pp: int) -> EngineConfig:
    """One of `pp` virtual engines: its share of the KV blocks and of the batch cap."""
    if pp == 1:
        return cfg
    blocks = max(1, (cfg.num_gpu_blocks or 0) // pp)
    seqs = max(1, cfg.max_num_seqs // pp)
    return cfg.model_copy(update={"num_gpu_blocks": blocks, "max_num_seqs": seqs})


@dataclass(frozen=True, slots=True, eq=False)
class SimulationSetup:
    """What `predict` simulates for a spec: the instance, one simulated engine's config and
    workload, and how many such engines the whole deployment is (module docstring)."""

    instance: Instance
    engine: EngineConfig
    workload: Workload
    num_engines: int


def simulation_setup(
    spec: PredictSpec, efficiency: EfficiencyFactors | None = None
) -> SimulationSetup:
    inst = build(spec, efficiency)
    num_engines = spec.num_instances * spec.pp
    engine_cfg = virtual_engine(inst.engine, spec.pp)
    per_seq_blocks = -(-(spec.isl + spec.osl) // engine_cfg.block_size)
    blocks = engine_cfg.num_gpu_blocks or 0
    max_batch = min(engine_cfg.max_num_seqs, max(1, blocks // per_seq_blocks))
    n = _num_requests(spec, max_batch)
    workload = _workload(spec, max(1, math.ceil(n / num_engines)), num_engines)
    return SimulationSetup(inst, engine_cfg, workload, num_engines)


def predict(spec: PredictSpec, efficiency: EfficiencyFactors | None = None) -> Prediction:
    """Simulate `spec` and summarise it (see the module docstring for pipeline parallelism)."""
    setup = simulation_setup(spec, efficiency)
    inst, pp, num_engines = setup.instance, spec.pp, setup.num_engines
    metered = _Metered(inst.step)
    result = Engine(setup.engine, metered).run(setup.workload)
    # one engine's records; per-GPU normalisation uses that engine's share of GPUs
    summary = summarize(result.records, num_gpus=spec.gpus_per_instance, num_instances=1)
    for key in THROUGHPUT_KEYS:
        summary[key] *= num_engines
        summary[key + "_per_instance"] *= pp
        summary[key + "_per_gpu"] *= pp
    d = inst.deployment
    busy = max(metered.time_s, 1e-12)
    return Prediction(
        spec=spec,
        summary=summary,
        mbu=metered.bytes / busy / d.gpu.hbm_bytes_per_s,
        mfu=metered.flops / busy / d.matmul_flops_per_s,
        num_kv_blocks=inst.engine.num_gpu_blocks or 0,
        max_num_kv_tokens=inst.memory.max_num_kv_tokens,
        weight_bytes_per_gpu=inst.memory.weight_bytes,
    )
