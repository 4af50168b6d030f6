"""`PredictSpec` (a deployment under a load) and `simulation_setup`: what `predict`, the
calibration replay and validation simulate for it.

Lengths are fixed (`isl`, `osl`), or with `length_ratio` r uniform integers in
[int(r * L), L] for each, drawn independently (vLLM `benchmark_serving --random-range-ratio`
as InferenceX runs it: `sample_random_requests`); the load is a closed loop at
`concurrency`, Poisson arrivals at `request_rate`, or offline (every request at t = 0).
Arrivals come from `llmsizer.workload.make_workload` with the spec's seed, so a seed gives
the same arrivals here as in `llmsizer bench` and in the fitted-step-cost path
(`PredictSpec.workload_spec`).

Several instances (`num_gpus` a multiple of tp x pp) and pipeline stages (`pp` virtual
engines) are simulated as one of `instances x pp` identical engines, each offered its share
of the load: `ceil(concurrency / engines)` clients, `request_rate / engines` Poisson, or
`1 / engines` of the requests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Self

from pydantic import Field, model_validator

from llmsizer.instance.deployment import DeploymentSpec
from llmsizer.instance.instance import Instance, make_instance
from llmsizer.perf import EfficiencyFactors
from llmsizer.sim import EngineConfig
from llmsizer.workload import (
    LengthSpec,
    Workload,
    WorkloadSpec,
    fixed_length_load,
    make_workload,
)


class PredictSpec(DeploymentSpec):
    """A deployment, its lengths and its load (a row of `llmsizer predict --cases`)."""

    num_gpus: int | None = Field(
        None, ge=1, description="GPUs in all: a multiple of tp x pp x dp (data-parallel instances)."
    )
    isl: int = Field(ge=1, description="Prompt tokens per request.")
    osl: int = Field(ge=1, description="Output tokens per request.")
    concurrency: int | None = Field(None, ge=1, description="Closed-loop requests in flight.")
    request_rate: float | None = Field(None, gt=0, description="Poisson arrival rate, req/s.")
    offline: bool = Field(False, description="All requests at once: max-throughput benchmark.")
    num_requests: int | None = Field(
        None, ge=1, description="Requests simulated; default: enough for steady state."
    )
    length_ratio: float | None = Field(
        None,
        gt=0,
        le=1,
        description="Lengths uniform in [int(ratio x isl), isl] and [int(ratio x osl), osl] "
        "(vLLM --random-range-ratio); unset: fixed isl and osl.",
    )
    seed: int = Field(0, ge=0, description="Seed for Poisson arrivals and length draws.")

    @model_validator(mode="after")
    def _one_load(self) -> Self:
        given = [self.concurrency is not None, self.request_rate is not None, self.offline]
        if sum(given) != 1:
            raise ValueError("give exactly one load: concurrency, request_rate, or offline")
        if self.num_gpus is not None and self.num_gpus % self.gpus_per_instance:
            raise ValueError(
                f"num_gpus={self.num_gpus} is not a multiple of tp x pp x dp = "
                f"{self.gpus_per_instance}"
            )
        return self

    @property
    def num_instances(self) -> int:
        return (self.num_gpus or self.gpus_per_instance) // self.gpus_per_instance

    @property
    def total_gpus(self) -> int:
        return self.num_instances * self.gpus_per_instance

    @property
    def num_engines(self) -> int:
        """Simulated engines the whole deployment is: instances x pipeline stages."""
        return self.num_instances * self.pipeline_parallel_size

    def workload_spec(self, num_requests: int, num_engines: int = 1) -> WorkloadSpec:
        """One engine's share of the load, `num_requests` long (module docstring)."""
        load = fixed_length_load(
            self.isl,
            self.osl,
            num_requests=num_requests,
            concurrency=None
            if self.concurrency is None
            else max(1, math.ceil(self.concurrency / num_engines)),
            request_rate=None if self.request_rate is None else self.request_rate / num_engines,
            seed=self.seed,
        )
        if self.length_ratio is None:
            return load
        ratio = self.length_ratio
        return load.model_copy(
            update={
                "isl": LengthSpec(kind="uniform", low=max(1, int(ratio * self.isl)), high=self.isl),
                "osl": LengthSpec(kind="uniform", low=max(1, int(ratio * self.osl)), high=self.osl),
            }
        )


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
    inst = make_instance(spec, max_model_len=spec.isl + spec.osl, efficiency=efficiency)
    num_engines = spec.num_engines
    engine_cfg = inst.virtual_engine()
    per_seq_blocks = -(-(spec.isl + spec.osl) // engine_cfg.block_size)
    blocks = engine_cfg.num_gpu_blocks or 0
    max_batch = min(engine_cfg.max_num_seqs, max(1, blocks // per_seq_blocks))
    n = _num_requests(spec, max_batch)
    share = max(1, math.ceil(n / num_engines))
    workload = make_workload(spec.workload_spec(share, num_engines))
    return SimulationSetup(inst, engine_cfg, workload, num_engines)


def _num_requests(spec: PredictSpec, max_batch: int) -> int:
    """Enough requests that ramp-up and drain are a small part of the run."""
    if spec.num_requests is not None:
        return spec.num_requests
    if spec.concurrency is not None:
        return max(4 * spec.concurrency, 32)
    if spec.offline:
        return max(4 * max_batch, 256)
    return 1000
