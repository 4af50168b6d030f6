"""`predict`: the course's core question for one deployment under one load, by simulation.

Given a `PredictSpec` (a deployment plus lengths and a load: a closed loop at a concurrency,
Poisson arrivals at a rate, or offline: everything at once), simulate the engine priced by
the performance model long enough for steady state and report the vLLM-style summary, per
instance and per GPU, plus MBU and MFU.

Several instances (`num_gpus` a multiple of tp x pp: data parallelism) share the load
evenly, and pipeline parallelism runs `pp` virtual engines (`llmsizer.instance.instance`):
both are simulated as one of `instances x pp` identical engines, each with its share of the
load, and throughputs are scaled back up by that count (`llmsizer.instance.setup`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from llmsizer.instance.setup import PredictSpec, simulation_setup
from llmsizer.instance.speculation import kv_fraction_of, run_instance, step_cost_of
from llmsizer.metrics import summarize
from llmsizer.perf import EfficiencyFactors, StepModel
from llmsizer.perf.speculative import SpeculativeStepCost
from llmsizer.sim import Batch
from llmsizer.sim.batch import make_batch

THROUGHPUT_KEYS = ("request_throughput", "output_throughput", "total_token_throughput")


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
            **self.spec.row(),
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
    """A step cost that also sums every step's FLOPs, HBM bytes and time, for MBU and MFU
    over the whole run (`StepModel.measure`: the same terms as the step's time)."""

    def __init__(self, step: StepModel | SpeculativeStepCost) -> None:
        self.step = step
        measure_decode = getattr(step, "measure_decode", None)  # `StepModel`'s, to the bit
        if measure_decode is None:
            self._measure_decode = lambda n, context: step.measure(make_batch((), n, context))
        else:
            self._measure_decode = measure_decode
        self.flops = 0.0
        self.bytes = 0.0
        self.time_s = 0.0
        # the engine's runs of quiet decode steps (`sim.engine`), when the cost prices them
        self.decode_run_s = self._run_s if hasattr(step, "measure_decode_run") else None
        self._last_run: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def __call__(self, batch: Batch) -> float:
        time_s, flops, memory = self.step.measure(batch)
        self.flops += flops
        self.bytes += memory
        self.time_s += time_s
        return time_s

    def _run_s(self, num_decode_seqs: int, context_tokens: int, num_steps: int) -> np.ndarray:
        assert isinstance(self.step, StepModel)
        self._last_run = self.step.measure_decode_run(num_decode_seqs, context_tokens, num_steps)
        return self._last_run[0]

    def decode_ran(self, num_steps: int) -> None:
        """The first `num_steps` of the last `decode_run_s` ran: summed as one by one."""
        assert self._last_run is not None
        time_s, flops, memory = (a[:num_steps] for a in self._last_run)
        self.flops = _running_sum(self.flops, flops)
        self.bytes = _running_sum(self.bytes, memory)
        self.time_s = _running_sum(self.time_s, time_s)

    def decode_step_s(self, num_decode_seqs: int, num_decode_context_tokens: int) -> float:
        """`self(batch)` of a decode-only batch without building it (the engine's decode
        price, `sim.batch.decode_step_cost`): the same sums, in the same order."""
        time_s, flops, memory = self._measure_decode(num_decode_seqs, num_decode_context_tokens)
        self.flops += flops
        self.bytes += memory
        self.time_s += time_s
        return time_s


def predict(spec: PredictSpec, efficiency: EfficiencyFactors | None = None) -> Prediction:
    """Simulate `spec` and summarise it (module docstring)."""
    setup = simulation_setup(spec, efficiency)
    inst, pp, num_engines = setup.instance, spec.pipeline_parallel_size, setup.num_engines
    inst.check_request_tokens(spec.isl + spec.osl, f"isl + osl = {spec.isl} + {spec.osl}")
    speculative = spec.speculative
    metered = _Metered(step_cost_of(speculative, inst.step, setup.engine.overlap_scheduler))
    engine = inst.simulator(setup.engine, metered)
    share = kv_fraction_of(speculative, inst.step, inst.memory.kv_cache_bytes)
    result = run_instance(engine, setup.workload, speculative, share)
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


def _running_sum(start: float, values: np.ndarray) -> float:
    """`start` plus each value in turn, as `+=` in a loop adds them (`numpy.cumsum`)."""
    return float(np.cumsum(np.concatenate(([start], values)))[-1])
