"""`Probe`: one configuration's simulated latencies at an offered request rate.

The search asks the same configuration many questions (its capacity, then its latency
percentiles at a handful of Poisson rates), so a `Probe` builds the engine once and keeps
every point it has simulated.

Run lengths, and why. Near saturation a queue takes long to reach its steady state (the
relaxation time grows like 1/(1 - utilisation)^2), and a short run that starts empty looks
better than the steady state: for NeMo 43B on 8 H100 at 93 % of capacity, p95 TTFT is 0.3 s
over 1,000 requests, 1.3 s over 3,000 and 3.0 s over 30,000. So a probe at 60 % of capacity
or more runs `num_requests` (default `HIGH_LOAD_REQUESTS`, 3,000) and judges latencies on the
requests after the first `WARMUP_FRACTION` (warm-up deletion); lighter loads relax fast and
run fewer, in proportion to the square of the load (`_num_at`), as their small batches make
each request cost more steps. Long runs at 93 % and above are still optimistic by a few percent of
rate; the search never plans above 95 % of capacity.

Every rate sees the same arrival pattern (drawn once at unit rate from the seed, Poisson
unless the use case says otherwise: `sizing.arrivals`; its times divided by the rate) and the same
lengths, so a probe is a deterministic function of the rate and the bisection in `search`
is well defined.

Pipeline parallelism follows `llmsizer.instance`: `pp` virtual engines, each taking 1/pp
of the load with 1/pp of the KV blocks and of `max_num_seqs`, steps priced at the full
pipeline latency; one is simulated and throughputs are scaled back up by `pp`. Rates here are
req/s per instance (one TP x PP group).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from llmsizer.instance import Instance
from llmsizer.instance.speculation import (
    InSteps,
    in_steps,
    kv_fraction_of,
    run_instance,
    step_cost_of,
    tokens_per_step,
)
from llmsizer.metrics import summarize
from llmsizer.records import RecordTable, RequestRecord
from llmsizer.sim import Batch, PrefillChunk, SimResult, StepCost
from llmsizer.sizing.arrivals import ArrivalPattern
from llmsizer.sizing.early_stop import MissWatch, WatchedRun, judged_rows
from llmsizer.sizing.limits import Latencies, Limit, Limits, Metric
from llmsizer.workload import Workload

HIGH_LOAD_REQUESTS = 3000
LOW_LOAD_REQUESTS = 500  # 25 requests above the p95 even when the load is light
HIGH_LOAD_FRACTION = 0.6  # of capacity: from here on, runs are `num_requests` long
WARMUP_FRACTION = 0.1  # requests left out of the latency percentiles (started empty)
OFFLINE_BATCHES = 4  # full batches in the capacity run: the drain at its end is then ~2 %
OFFLINE_MIN_REQUESTS = 200
Pause = Callable[[WatchedRun], bool]  # whether to put a watched run aside after a slice


@dataclass(frozen=True, slots=True)
class Lengths:
    """Prompt and output tokens of the requests the probes run (read-only int64, each >= 1);
    probes cycle through them when they need more requests."""

    prompt: np.ndarray
    output: np.ndarray
    source: str

    @property
    def num_requests(self) -> int:
        return int(self.prompt.shape[0])

    @property
    def mean_prompt(self) -> float:
        return float(self.prompt.mean())

    @property
    def mean_output(self) -> float:
        return float(self.output.mean())

    @property
    def max_context(self) -> int:
        return int((self.prompt + self.output).max())


@dataclass(frozen=True, slots=True)
class Point:
    """One simulated load: the offered Poisson rate (req/s per instance), its summary
    (`llmsizer.metrics.summarize` keys over the requests after warm-up) and the latency
    percentiles the limits judge, in seconds. `stopped_for`: the limit the run stopped
    early for, certain to miss it (`early_stop`; the summary then covers the requests
    finished by then); `None` for a whole run."""

    offered_rate: float
    summary: dict[str, float]
    latencies: Latencies
    stopped_for: Limit | None = None

    @property
    def complete(self) -> bool:
        return self.stopped_for is None


@dataclass(frozen=True, slots=True)
class Batch1:
    """Latencies of a request alone on the instance (seconds, at the limits' percentiles
    over the lengths): a lower bound on the latency at any load."""

    ttft_s: float
    tpot_s: float
    e2el_s: float

    def latency_s(self, metric: Metric) -> float:
        """The latency of `metric`, seconds."""
        value: float = getattr(self, f"{metric.value}_s")
        return value


@dataclass(frozen=True, slots=True)
class ProbeState:
    """What a probe has simulated: its capacity (req/s per instance, `None` before its
    capacity run) and its points by offered rate (`Probe.state`, `Probe.absorb`)."""

    capacity: float | None
    points: dict[float, Point]

    def merged(self, other: ProbeState) -> ProbeState:
        """Both states of one probe as one (`Probe.absorb`'s rule)."""
        points = dict(self.points)
        _merge_points(points, other.points)
        capacity = self.capacity if self.capacity is not None else other.capacity
        return ProbeState(capacity, points)


class Probe:
    """Simulates one instance on `lengths` at any rate; caches points by rate."""

    def __init__(
        self,
        instance: Instance,
        lengths: Lengths,
        limits: Limits,
        *,
        seed: int = 0,
        num_requests: int | None = None,
        arrivals: ArrivalPattern | None = None,
    ) -> None:
        self.instance = instance
        self.lengths = lengths
        self.limits = limits
        self.pp = instance.deployment.pipeline_parallel_size
        self.speculative = instance.spec.speculative
        cost = step_cost_of(self.speculative, instance.step, instance.engine.overlap_scheduler)
        self.engine = instance.simulator(instance.virtual_engine(), cost)
        self.seed = seed
        kv_bytes = instance.memory.kv_cache_bytes
        self._kv_fraction = kv_fraction_of(self.speculative, instance.step, kv_bytes)
        self.num_requests = num_requests or HIGH_LOAD_REQUESTS
        rng = np.random.default_rng(seed)
        pattern = arrivals or ArrivalPattern()
        self._unit_arrivals = pattern.unit_arrivals(self.num_requests, rng)
        self._points: dict[float, Point] = {}  # every rate simulated, shared with views
        self._asked: set[float] = set()  # the rates asked of this probe
        self._capacity: dict[str, float] = {}  # "capacity" once run, shared with views
        self._paused: dict[float, tuple[WatchedRun, InSteps | None]] = {}  # by rate

    @property
    def step_cost(self) -> StepCost:
        return self.engine.step_cost

    @property
    def points(self) -> list[Point]:
        """Every Poisson point asked of this probe so far, by offered rate."""
        return [self._points[r] for r in sorted(self._asked)]

    def view(self) -> Probe:
        """A probe sharing this one's engine, capacity run and simulated points (so it
        re-simulates nothing), whose `points` list only what is asked of it: what a probe
        cache hands each plan, so a plan's result does not depend on earlier plans."""
        other = copy.copy(self)
        other._asked = set()
        return other

    def state(self) -> ProbeState:
        """What this probe has simulated, as plain data (its capacity, its points by rate):
        what a probe cache sends between processes (`ProbeCache`), without the engine."""
        return ProbeState(self._capacity.get("capacity"), dict(self._points))

    def absorb(self, state: ProbeState) -> None:
        """Take what another copy of this probe simulated (the same configuration, lengths,
        seed and run length: the same values): its capacity if this one has none, its
        points where this one has none, or a whole run's in place of a stopped one."""
        if state.capacity is not None:
            self._capacity.setdefault("capacity", state.capacity)
        _merge_points(self._points, state.points)

    def at_rate(self, rate: float, stop_for: Limits | None = None) -> Point:
        """Poisson arrivals at `rate` req/s per instance. `stop_for`: the run may stop once
        it is certain to miss these limits (`early_stop.MissWatch`), for a search that needs
        only the verdict; without it the point is a whole run's, simulated again if the
        one kept was stopped."""
        point = self.at_rate_or_pause(rate, stop_for)
        assert point is not None  # put aside only when `pause` says so
        return point

    def at_rate_or_pause(
        self, rate: float, stop_for: Limits | None = None, pause: Pause | None = None
    ) -> Point | None:
        """`at_rate`, whose watched run is asked `pause(run)` after each slice: True puts it
        aside (`None` is returned), and the next call at this rate and limit resumes it."""
        if not rate > 0:
            raise ValueError(f"rate must be > 0 req/s, got {rate}")
        kept = self._points.get(rate)
        watch = self._watch(rate, stop_for)
        if kept is None or not (kept.complete or (watch and kept.stopped_for == watch.limit)):
            point = self._point(rate, watch, pause)
            if point is None:
                return None
            self._points[rate] = point
        self._asked.add(rate)
        return self._points[rate]

    def _watch(self, rate: float, stop_for: Limits | None) -> MissWatch | None:
        if stop_for is None:
            return None
        n = self._num_at(rate / self.capacity())
        return MissWatch.of(stop_for, n, int(WARMUP_FRACTION * n))

    def _point(self, rate: float, watch: MissWatch | None, pause: Pause | None) -> Point | None:
        """One simulation at `rate` summarised over the requests after warm-up (`None`:
        put aside, `at_rate_or_pause`)."""
        stopped = False
        if watch is None and self.speculative is None:
            records = self.run(rate).records
            judged = records[int(WARMUP_FRACTION * len(records)) :]
        elif watch is None:  # in verify steps, its judged rows as chunks (as a watched run's)
            whole = self.in_steps(self._workload(self._arrivals(rate)))
            table = whole.engine.run(whole.workload).records
            assert isinstance(table, RecordTable)
            judged = whole.in_tokens(table[int(WARMUP_FRACTION * len(table)) :])
        else:
            run, steps = self._paused.pop(rate, (None, None))
            if run is None or run.watch != watch:
                run, steps = self._watched(rate, watch)
            while (outcome := run.advance()) is None:
                if pause is not None and pause(run):
                    self._paused[rate] = (run, steps)
                    return None
            result, stopped = outcome
            assert isinstance(result.records, RecordTable)
            judged = judged_rows(result.records, watch.warm)  # records[warm:] when whole
            if steps is not None:
                judged = steps.in_tokens(judged)
        summary = summarize(judged, percentiles=self.limits.percentiles)
        for key in ("request_throughput", "output_throughput", "total_token_throughput"):
            summary[key] *= self.pp
        latencies = Latencies.from_summary(summary, self.limits.percentiles)
        return Point(rate, summary, latencies, watch.limit if watch and stopped else None)

    def _watched(self, rate: float, watch: MissWatch) -> tuple[WatchedRun, InSteps | None]:
        """The run at `rate` watched by `watch`: a speculating one in verify steps (its
        TTFT and E2E are the same), with what maps its records back to tokens."""
        workload = self._workload(self._arrivals(rate))
        if self.speculative is None:
            return WatchedRun(self.engine, workload, watch), None
        steps = self.in_steps(workload)
        return WatchedRun(steps.engine, steps.workload, watch), steps

    def run(self, rate: float) -> SimResult:
        """The simulation behind `at_rate` (one virtual engine), for timelines."""
        return self._simulate(self._arrivals(rate))

    def _arrivals(self, rate: float) -> np.ndarray:
        """Arrival times of the run at `rate` (req/s per instance) on one virtual engine."""
        return self._unit_arrivals[: self._num_at(rate / self.capacity())] * (self.pp / rate)

    def capacity(self) -> float:
        """Saturated throughput, req/s per instance: `OFFLINE_BATCHES` full batches of
        requests all at t = 0, divided by the time the last one finishes (offline serving)."""
        if "capacity" not in self._capacity:
            n = self._capacity_requests()
            at_once = np.zeros(n)
            run = self._simulate if self.speculative is None else self._run_in_steps
            last = _last_finish_s(run(at_once).records)
            self._capacity["capacity"] = n / last * self.pp
        return self._capacity["capacity"]

    def _capacity_requests(self) -> int:
        return max(OFFLINE_MIN_REQUESTS, OFFLINE_BATCHES * self.kv_batch())

    def capacity_workload(self) -> Workload:
        """The capacity run's requests, all at t = 0."""
        return self._workload(np.zeros(self._capacity_requests()))

    def in_steps(self, workload: Workload) -> InSteps:
        """A speculating probe's run of `workload` in verify steps, as it simulates it (the
        same acceptance draws: `instance.speculation.in_steps`)."""
        assert self.speculative is not None
        rng = np.random.default_rng(self.seed)
        return in_steps(self.engine, workload, self.speculative, self._kv_fraction, rng)

    def kv_batch(self) -> int:
        """Sequences of the mean request the engine holds at once: what its KV blocks hold,
        or `max_num_seqs` when that is smaller (per virtual engine)."""
        cfg = self.engine.config
        per_seq = math.ceil((self.lengths.mean_prompt + self.lengths.mean_output) / cfg.block_size)
        return min(cfg.max_num_seqs, max(1, (cfg.num_gpu_blocks or per_seq) // per_seq))

    def kv_limited(self) -> bool:
        """True when the KV cache, not `max_num_seqs`, caps the batch."""
        return self.kv_batch() < self.engine.config.max_num_seqs

    def batch1(self) -> Batch1:
        """Latency percentiles with no other request running (step model, no simulation)."""
        cfg = self.instance.engine
        chunk = cfg.max_num_batched_tokens if cfg.enable_chunked_prefill else None
        table: dict[tuple[int, int], tuple[float, float, float]] = {}
        per_step = tokens_per_step(self.speculative)
        rows = []
        for isl, osl in zip(
            self.lengths.prompt.tolist(), self.lengths.output.tolist(), strict=True
        ):
            if (isl, osl) not in table:
                table[isl, osl] = _alone(self.step_cost, isl, osl, chunk or isl, per_step)
            rows.append(table[isl, osl])
        values = np.asarray(rows)
        lim = self.limits
        return Batch1(
            ttft_s=float(np.percentile(values[:, 0], lim.ttft_percentile)),
            tpot_s=float(np.percentile(values[:, 1], lim.tpot_percentile)),
            e2el_s=float(np.percentile(values[:, 2], lim.e2el_percentile)),
        )

    def _num_at(self, utilisation: float) -> int:
        """Requests for a run at `utilisation` of capacity (module docstring)."""
        share = min(1.0, utilisation / HIGH_LOAD_FRACTION) ** 2  # a run's cost ~ n / load
        return max(min(LOW_LOAD_REQUESTS, self.num_requests), round(self.num_requests * share))

    def _simulate(self, arrival_s: np.ndarray) -> SimResult:
        workload = self._workload(arrival_s)
        return run_instance(self.engine, workload, self.speculative, self._kv_fraction, self.seed)

    def _run_in_steps(self, arrival_s: np.ndarray) -> SimResult:
        """A speculating probe's whole run with its records left in verify steps (the same
        draws as `_simulate`'s), whose finish times are the tokens': all a capacity run reads
        (mapping its records to tokens was a quarter of its CPU)."""
        steps = self.in_steps(self._workload(arrival_s))
        return steps.engine.run(steps.workload)

    def _workload(self, arrival_s: np.ndarray) -> Workload:
        idx = np.arange(arrival_s.shape[0]) % self.lengths.num_requests
        return Workload(
            num_prompt_tokens=self.lengths.prompt[idx],
            num_output_tokens=self.lengths.output[idx],
            arrival_s=arrival_s,
        )


def _merge_points(into: dict[float, Point], points: dict[float, Point]) -> None:
    """Points of another copy of a probe added where `into` has none at their rate, or a
    whole run's in place of a stopped one (the values are the same: probes are
    deterministic)."""
    for rate, point in points.items():
        kept = into.get(rate)
        if kept is None or (point.complete and not kept.complete):
            into[rate] = point


def _last_finish_s(records: Sequence[RequestRecord]) -> float:
    """When the last request finished: a column's maximum for the engine's `RecordTable`
    (building every `RequestRecord` to read it was 12 % of a capacity run), else per record
    (speculative runs in tokens give a list)."""
    if isinstance(records, RecordTable):
        return float(records.finish_s.max())
    return max(r.finish_s or 0.0 for r in records)


def _alone(
    step: StepCost, isl: int, osl: int, chunk: int, per_step: float = 1.0
) -> tuple[float, float, float]:
    """(TTFT, TPOT, E2E) seconds of one request alone: its prompt in chunks of `chunk` tokens,
    then one decode step per `per_step` further tokens (1, or speculation's mean) at the mean
    context (cost is linear in it)."""
    ttft = 0.0
    done = 0
    while done < isl:
        n = min(chunk, isl - done)
        ttft += step(Batch(prefill_chunks=(PrefillChunk(n, done),)))
        done += n
    tpot = step(Batch(num_decode_seqs=1, num_decode_context_tokens=isl + osl // 2)) / per_step
    return ttft, tpot, ttft + (osl - 1) * tpot
