"""Re-timing a recorded schedule under other efficiency factors: calibration's fast path.

A simulation decides, step by step, which requests run; the performance model says how
long each step takes. In a closed loop or an offline burst those decisions never look at
the clock (requests are all waiting, or arrive the moment another finishes), so the
schedule is the same under any factors and only its timing changes. `ScheduleTrace` keeps
what the timing needs: per segment of consecutive steps, the summed step features
(`llmsizer.calibrate.features`); per request, the segments that end with its first and its
last token, and its arrival. `replay` re-prices the segments and recomputes the metrics:

    end_j = max(end_{j-1}, release_j) + dt_j         release_j: latest open-loop arrival
          = S_j + max over i <= j of (release_i - S_{i-1})   admitted by segment j's first
                                                             step; S: prefix sums of dt
    TTFT  = end[first] - arrival          TPOT = (end[last] - end[first]) / (n - 1)

Segments end wherever a request gets its first or last token and start wherever an
open-loop arrival is admitted, so these formulas see every event. An open-loop (Poisson)
schedule is replayed frozen: exact under the factors it was simulated with and a
first-order approximation elsewhere, so a fit re-simulates such runs as its factors move.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llmsizer.calibrate.features import SHAPE_COLUMNS, StepFeaturizer, price
from llmsizer.calibrate.spec_features import SpeculativeFeaturizer
from llmsizer.perf.efficiency import EfficiencyFactors

Featurizer = StepFeaturizer | SpeculativeFeaturizer  # a plain or a speculating engine's steps


@dataclass(frozen=True, slots=True, eq=False)
class StepRecord:
    """A simulated run as plain arrays: per step and per request, times in seconds.

    - `aggregates` (steps x NUM_AGGREGATES): each step's `BatchAggregates` as a row
      (`StepFeaturizer.aggregates`); `start_s`, `end_s`: when each step ran.
    - `arrival_s`, `scheduled_s`, `first_token_s`, `last_token_s`, `num_output_tokens`:
      per request. `closed_loop`: arrivals after the first wave happen when another
      request finishes (at a step's end) rather than at fixed times.
    """

    aggregates: np.ndarray
    start_s: np.ndarray
    end_s: np.ndarray
    arrival_s: np.ndarray
    scheduled_s: np.ndarray
    first_token_s: np.ndarray
    last_token_s: np.ndarray
    num_output_tokens: np.ndarray
    closed_loop: bool


@dataclass(frozen=True, slots=True, eq=False)
class ScheduleTrace:
    """A recorded schedule reduced to rows of summed step features (module docstring).

    `row_segment[r]`: the segment row r belongs to (rows of one segment are its steps
    grouped by shape). `release_s[j]`: the earliest time segment j may start. Requests
    arrive at `arrival_s`, or, where `arrival_segment >= 0`, at the end of that segment.
    Without `has_latencies` the whole run is one segment: only throughputs are meaningful.
    Throughputs are multiplied by `throughput_scale` (identical engines the run stands for:
    pipeline stages in flight, data-parallel instances) and divided by `num_gpus` (all of
    them) for the per-GPU keys. `first_use_builds`: one-off builds a cold server ran before
    the first wave's first tokens, each `EfficiencyFactors.first_use_build_s` long (set by
    the caller that knows the run: `calibrate.aic_fit.Recorded`). `moe`: the model has routed
    experts, so its first chunk is held `EfficiencyFactors.first_token_hold_s(True)`.
    """

    features: np.ndarray
    row_segment: np.ndarray
    release_s: np.ndarray
    arrival_s: np.ndarray
    arrival_segment: np.ndarray
    first_segment: np.ndarray
    last_segment: np.ndarray
    num_output_tokens: np.ndarray
    has_latencies: bool
    throughput_scale: int = 1
    num_gpus: int = 1
    first_use_builds: int = 0
    moe: bool = False

    @classmethod
    def from_record(
        cls,
        run: StepRecord,
        featurizer: Featurizer,
        *,
        latencies: bool,
        throughput_scale: int = 1,
        num_gpus: int = 1,
        moe: bool = False,
    ) -> ScheduleTrace:
        """Cut `run` into segments at its events (all in one without `latencies`), group
        each segment's steps by shape and featurise each group's mean aggregates."""
        num_steps = run.end_s.shape[0]
        first = _step_index(run.end_s, run.first_token_s)
        last = _step_index(run.end_s, run.last_token_s)
        admitted = _step_index(run.start_s, run.scheduled_s)
        release = np.zeros(num_steps)
        arrival_step = np.full(run.arrival_s.shape[0], -1)
        if run.closed_loop:
            later = run.arrival_s > 0
            arrival_step[later] = _step_index(run.end_s, run.arrival_s[later])
        else:
            np.maximum.at(release, admitted, run.arrival_s)
        if latencies:
            starts = np.zeros(num_steps, dtype=bool)
            starts[0] = True
            ends = np.concatenate([first, last, arrival_step[arrival_step >= 0]])
            starts[ends[ends + 1 < num_steps] + 1] = True
            starts[release > 0] = True
            segment_of_step = np.cumsum(starts) - 1
        else:
            segment_of_step = np.zeros(num_steps, dtype=np.int64)
        num_segments = int(segment_of_step[-1]) + 1
        seg_release = np.zeros(num_segments)
        np.maximum.at(seg_release, segment_of_step, release)
        rows, row_segment = _group_rows(run.aggregates, segment_of_step, featurizer)

        def seg(steps: np.ndarray) -> np.ndarray:
            return np.where(steps >= 0, segment_of_step[np.maximum(steps, 0)], -1)

        return cls(
            features=rows,
            row_segment=row_segment,
            release_s=seg_release,
            arrival_s=np.asarray(run.arrival_s, dtype=np.float64),
            arrival_segment=seg(arrival_step) if latencies else np.full_like(arrival_step, -1),
            first_segment=seg(first),
            last_segment=seg(last),
            num_output_tokens=np.asarray(run.num_output_tokens, dtype=np.float64),
            has_latencies=latencies,
            throughput_scale=throughput_scale,
            num_gpus=num_gpus,
            moe=moe,
        )

    @property
    def num_rows(self) -> int:
        return int(self.features.shape[0])


def _step_index(times: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Index of the step whose time in `times` (sorted) equals each wanted time exactly."""
    i = np.searchsorted(times, wanted)
    ok = (i < times.shape[0]) & (times[np.minimum(i, times.shape[0] - 1)] == wanted)
    if not ok.all():
        raise ValueError("a request time matches no step boundary: the record is inconsistent")
    return i


def _group_rows(
    aggregates: np.ndarray, segment_of_step: np.ndarray, featurizer: Featurizer
) -> tuple[np.ndarray, np.ndarray]:
    """Features of the steps of each (segment, shape), rows sorted by segment: the count
    times the features of the mean aggregates (exact: features are affine in them); a
    speculating step's parts are rows of their own (`spec_features`)."""
    key = np.column_stack([segment_of_step, aggregates[:, SHAPE_COLUMNS]])
    unique, inverse, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    sums = np.zeros((unique.shape[0], aggregates.shape[1]))
    np.add.at(sums, inverse, aggregates)
    parts = featurizer.parts if isinstance(featurizer, SpeculativeFeaturizer) else 1
    rows = featurizer.features(sums / counts[:, None]) * np.repeat(counts, parts)[:, None]
    return rows, np.repeat(unique[:, 0].astype(np.int64), parts)


def replay(
    trace: ScheduleTrace, eff: EfficiencyFactors, row_s: np.ndarray | None = None
) -> dict[str, float]:
    """The run's metrics under `eff`, with the vLLM summary's keys and units (ms, 1/s).

    Throughputs are per instance and `_per_gpu`; latencies are present only when the trace
    `has_latencies` (TPOT and ITL only when some request has two tokens or more). `row_s`,
    each feature row's seconds, replaces `price(trace.features, eff)` where a caller prices
    the steps another way (a what-if of another step formula: `bench/aic_host.py`).
    """
    row_s = price(trace.features, eff) if row_s is None else row_s
    dt = np.bincount(trace.row_segment, weights=row_s, minlength=trace.release_s.shape[0])
    if trace.first_use_builds and eff.first_use_build_s:  # the first wave waits (class doc)
        dt[0] += trace.first_use_builds * eff.first_use_build_s
    total = np.cumsum(dt)
    end = total + np.maximum.accumulate(trace.release_s - (total - dt))
    arrival = np.where(
        trace.arrival_segment >= 0, end[np.maximum(trace.arrival_segment, 0)], trace.arrival_s
    )
    first, last = end[trace.first_segment], end[trace.last_segment]
    hold_s = eff.first_token_hold_s(trace.moe)
    if hold_s:  # the client's view (`llmsizer.sim.delivery`)
        first = first + hold_s
        last = np.maximum(last, first)
    n = trace.num_output_tokens
    duration = float(last.max() - arrival.min())
    out = {"duration_s": duration}
    for key, count in (("output_throughput", n.sum()), ("request_throughput", n.shape[0])):
        out[key] = float(count) / duration * trace.throughput_scale
        out[f"{key}_per_gpu"] = out[key] / trace.num_gpus
    if trace.has_latencies:
        multi = n > 1
        decode_s = (last - first)[multi]
        out["mean_ttft_ms"] = float((first - arrival).mean()) * 1e3
        if multi.any():
            out["mean_tpot_ms"] = float((decode_s / (n[multi] - 1)).mean()) * 1e3
            out["mean_itl_ms"] = float(decode_s.sum() / (n[multi] - 1).sum()) * 1e3
    return out
