"""Recording what `predict` simulates, so that calibration can re-price it.

Simulating every case at every optimiser step would take hours, so each case is simulated
once and its schedule recorded (`record_trace`): each step's batch aggregates (cheap), its
times, and every request's arrival, first and last token. The optimiser then re-prices the
recorded steps for new factors (`llmsizer.calibrate.replay`), which is exact for offline and
closed-loop runs, whose scheduling never reads the clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from llmsizer.calibrate.features import NUM_AGGREGATES, StepFeaturizer
from llmsizer.calibrate.replay import Featurizer, ScheduleTrace, StepRecord
from llmsizer.calibrate.spec_features import SpeculativeFeaturizer
from llmsizer.instance import PredictSpec, simulation_setup
from llmsizer.instance.speculation import kv_fraction_of, run_instance, step_cost_of
from llmsizer.perf import EfficiencyFactors, StepModel
from llmsizer.sim import Batch, Engine
from llmsizer.sweep import Sweep, open_sweep

Case = tuple[PredictSpec, Mapping[str, float]]
"""A deployment under a load and the metrics measured for it (vLLM summary keys and units:
`output_throughput` tok/s, `mean_ttft_ms`, ...)."""


class _Recorder:
    """A step cost that prices like `step` and records each batch's aggregates."""

    def __init__(self, step: Callable[[Batch], float], featurizer: Featurizer) -> None:
        self.step = step
        self.featurizer = featurizer
        self.aggregates: list[tuple[float, ...]] = []

    def __call__(self, batch: Batch) -> float:
        self.aggregates.append(self.featurizer.aggregates(batch))
        return self.step(batch)


def record_trace(
    spec: PredictSpec, efficiency: EfficiencyFactors | None = None, latencies: bool = True
) -> ScheduleTrace:
    """Simulate `spec` exactly as `predict` does and keep its re-priceable schedule.

    `replay(record_trace(spec, e), e)` equals `predict(spec, e).summary` for the throughput
    and mean latency keys; for offline and closed-loop specs it does so under any other
    factors too. Without `latencies` the trace is smaller and gives throughputs only.
    """
    setup = simulation_setup(spec, efficiency)  # exactly what `predict` simulates
    inst, num_engines, speculative = setup.instance, setup.num_engines, spec.speculative
    # a speculating engine's: in verify steps
    step = step_cost_of(speculative, inst.step, setup.engine.overlap_scheduler)
    tile = inst.step.efficiency.experts_tile_rows
    featurizer: Featurizer = (
        StepFeaturizer(inst.deployment, inst.step.cuda_graphs, experts_tile_rows=tile)
        if isinstance(step, StepModel)
        else SpeculativeFeaturizer.of(step)
    )
    recorder = _Recorder(step, featurizer)
    share = kv_fraction_of(speculative, inst.step, inst.memory.kv_cache_bytes)
    result = run_instance(Engine(setup.engine, recorder), setup.workload, speculative, share)
    records = result.records
    run = StepRecord(
        aggregates=np.array(recorder.aggregates).reshape(-1, NUM_AGGREGATES),
        start_s=result.steps.start_s,
        end_s=result.steps.end_s,
        arrival_s=np.array([r.arrival_s for r in records]),
        scheduled_s=np.array([r.scheduled_s for r in records], dtype=np.float64),
        first_token_s=np.array([r.token_times_s[0] for r in records]),
        last_token_s=np.array([r.token_times_s[-1] for r in records]),
        num_output_tokens=np.array([r.num_output_tokens for r in records]),
        closed_loop=spec.concurrency is not None,
    )
    return ScheduleTrace.from_record(
        run,
        featurizer,
        latencies=latencies,
        throughput_scale=num_engines,
        num_gpus=spec.total_gpus,
        moe=inst.deployment.model.moe is not None,
    )


def _record(job: tuple[PredictSpec, EfficiencyFactors, bool]) -> ScheduleTrace:
    return record_trace(*job)


def record_traces(
    specs: Sequence[PredictSpec],
    efficiency: EfficiencyFactors,
    latencies: Sequence[bool],
    workers: int | Sweep = 1,
) -> list[ScheduleTrace]:
    """`record_trace` for each spec, in `workers` local processes when more than one, or
    on the sweep `workers` (`llmsizer.sweep`: a process pool or Ray; the same traces)."""
    jobs = [(s, efficiency, lat) for s, lat in zip(specs, latencies, strict=True)]
    if not isinstance(workers, int):
        return workers.map(_record, jobs)
    if workers <= 1 or len(jobs) < 2:
        return [_record(job) for job in jobs]
    with open_sweep(workers) as sweep:
        return sweep.map(_record, jobs)
