"""Stopping a probe once it is certain to miss its limit (issue 13: in the course's NeMo 43B
plan, failing probes were 40 % of the engine steps, most of them in the lever table).

A probe judges the requests after warm-up (the N with ids >= `warm`) by one percentile p of
a latency. numpy's linear percentile is at least the order statistic x_(k),
k = floor((N - 1) p / 100) (it interpolates upwards from there), so once N - k of the N
values are certainly over the limit, x_(k) is over it, and so is the percentile, whatever
the other requests do: the probe fails. A watched run advances in `SLICES` equal slices of
its arrival span; after each, it counts the judged requests that have finished with their
latency over the limit (their records, the first-token hold included, so the values are
exact). One request more than the bound needs (k - 1 for k) and a relative 1e-9 above the
limit absorb the rounding in numpy's index and in the ms summary, so a stopped probe's full
run fails too, and a probe that is not stopped ran to the end: the pass or fail verdict is
the full run's, always (`tests/sizing/test_early_stop.py`). Slices go on past the last
arrival until every request has finished (an overloaded run drains long after it). A run is
a `WatchedRun`: the lever table's search may put it aside between slices and resume it.

Only a run judged on one limit, of TTFT or E2E, is watched: those latencies are known when a
request finishes, and with one limit the limit a failure binds is that one. A speculating
probe's run is watched in verify steps (`instance.speculation.InSteps`): a request's first
and last tokens arrive with its first and last steps, so its TTFT and E2E are the same. A
stopped run's point (`Point.complete` False) holds the summary of the requests finished by then, a
lower bound of the full run's latencies: the search uses it for its verdict only, and
anything that shows a point's latencies asks for a complete one (`Probe.at_rate`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from llmsizer.records import RecordTable
from llmsizer.sim import Engine, SimResult
from llmsizer.sim.arrivals import Arrivals
from llmsizer.sizing.limits import Limit, Limits, Metric
from llmsizer.workload import Workload

SLICES = 16  # checks per watched run; a TTFT check reads the finished requests' first
# tokens off the step end times (`_Run.first_tokens`, O(steps)), not a partial record table
# (2-3x that): NeMo's lever table 1,113,507 -> 1,107,345 steps from 8, 1,103,701 at 32 for
# twice the checks (issue 11, session 11)
_WATCHED = (Metric.TTFT, Metric.E2EL)  # latencies final when a request finishes


@dataclass(frozen=True, slots=True)
class MissWatch:
    """The one limit a probe's run is judged on, and the requests it judges (ids >= `warm`,
    `num_judged` of them)."""

    limit: Limit
    warm: int
    num_judged: int

    @classmethod
    def of(cls, limits: Limits, num_requests: int, warm: int) -> MissWatch | None:
        """A watch for a run of `num_requests` judged from id `warm` on; `None` when the
        limits are not one TTFT or E2E limit (module docstring)."""
        active = limits.limits()
        if len(active) != 1 or active[0].metric not in _WATCHED or num_requests <= warm:
            return None
        return cls(active[0], warm, num_requests - warm)

    @property
    def needed(self) -> int:
        """Judged values over the limit that make the percentile certainly over it."""
        k = math.floor((self.num_judged - 1) * (self.limit.percentile / 100))
        return self.num_judged - max(k - 1, 0)

    def misses(self, request_id: np.ndarray, latency_s: np.ndarray) -> tuple[int, int]:
        """Of finished requests (ids, their latency of the watched metric): the judged ones
        and how many of them are over the limit."""
        judged = request_id >= self.warm
        over = latency_s[judged] > self.limit.limit_s * (1 + 1e-9)
        return int(judged.sum()), int(over.sum())


class WatchedRun:
    """`engine.run(workload)` a slice at a time, watched by `watch` (module docstring): a
    run that can be put aside between slices and resumed (a lever search lets a probe that
    looks like failing wait while its rivals run, `search._BranchAndBound`)."""

    def __init__(self, engine: Engine, workload: Workload, watch: MissWatch) -> None:
        assert workload.arrival_s is not None  # Poisson probes only
        cfg = engine.config
        arrivals = Arrivals(workload, cfg.block_size, cfg.enable_prefix_caching)
        self.run, self.watch = engine.start(workload, arrivals), watch
        self.num_requests = workload.num_requests
        self.slice_s = float(workload.arrival_s[-1]) / SLICES or 1.0
        self.num_slices = 0
        self.judged, self.over = 0, 0  # at the last check: judged requests finished, over

    @property
    def num_steps(self) -> int:
        """Engine steps simulated so far."""
        return self.run.log.num_steps

    @property
    def failing(self) -> bool:
        """Whether the run looks like failing: half the misses that decide it are in, at
        the rate of a failing run's (`needed` in `num_judged`). A guess, which only orders
        the work (one slice's few requests alone guessed wrong and cost more steps)."""
        watch, over = self.watch, self.over
        return 2 * over >= watch.needed and over * watch.num_judged >= watch.needed * self.judged

    def advance(self) -> tuple[SimResult, bool] | None:
        """One more slice (they go on past the last arrival: an overloaded run ends much
        later): the result so far and True once certain to miss, the whole run's and False
        once every request finished, else `None`."""
        self.num_slices += 1
        run, watch = self.run, self.watch
        run.advance(self.slice_s * self.num_slices)
        if len(run.finished) == self.num_requests:
            return run.result(), False  # every request finished: the whole run's result
        if watch.limit.metric is Metric.TTFT:  # read without building the step log
            ids, arrival_s, first_s = run.first_tokens()
            self.judged, self.over = watch.misses(ids, first_s - arrival_s)
        else:
            records = run.result().records
            assert isinstance(records, RecordTable)
            latency_s = records.last_token_s() - records.arrival_s
            self.judged, self.over = watch.misses(records.request_id, latency_s)
        return (run.result(), True) if self.over >= watch.needed else None


def run_watched(engine: Engine, workload: Workload, watch: MissWatch) -> tuple[SimResult, bool]:
    """`engine.run(workload)`, stopped once `watch` is certain the limit is missed: the
    result so far (the requests finished) and True, or the whole run's result and False."""
    run = WatchedRun(engine, workload, watch)
    while (outcome := run.advance()) is None:
        pass
    return outcome


def judged_rows(records: RecordTable, warm: int) -> RecordTable:
    """The rows of requests with ids >= `warm` (ids ascend: a suffix of the table)."""
    return records[int(np.searchsorted(records.request_id, warm)) :]
