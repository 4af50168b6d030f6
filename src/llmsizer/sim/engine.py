"""The serving engine's event loop: decide a batch, price it, apply it.

Simulated time only moves by engine steps (a step takes what the `StepCost` says) and, when
the engine is idle, jumps to the next arrival or policy timeout. Nothing reads the clock and
all randomness lives in the workload, so a run is a pure function of its inputs.
"""

from __future__ import annotations

import gc
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from llmsizer.records import RequestRecord
from llmsizer.sim.arrivals import Arrivals
from llmsizer.sim.batch import StepCost, decode_step_cost
from llmsizer.sim.batching.base import Scheduler
from llmsizer.sim.batching.continuous import ContinuousScheduler
from llmsizer.sim.batching.static import StaticScheduler
from llmsizer.sim.config import EngineConfig
from llmsizer.sim.kv_cache import KVCacheManager
from llmsizer.sim.request import SimRequest
from llmsizer.sim.result import SimResult, StepLogBuilder
from llmsizer.sim.token_times import FinishedLog, first_tokens, record_table
from llmsizer.units import MS
from llmsizer.workload import Workload

Progress = Callable[[int, int], None]  # (requests finished, requests in total)
# Quiet decode steps worth pricing at once (`_quiet_run`): numpy's per-call cost is about
# that of a few dozen steps one by one
MIN_QUIET_RUN = 32


@dataclass(frozen=True, slots=True)
class Engine:
    """A batching configuration plus a step-cost function: everything a run needs but the load.

    `first_token_delay_s`: how long the server's API layer holds each stream's first chunk
    before the client sees it (`llmsizer.sim.delivery`); 0 for a server that delivers tokens
    as the engine makes them. Seconds, >= 0.
    """

    config: EngineConfig
    step_cost: StepCost
    first_token_delay_s: float = 0.0

    def __post_init__(self) -> None:
        if not self.first_token_delay_s >= 0:
            raise ValueError(f"first_token_delay_s must be >= 0, got {self.first_token_delay_s}")

    def run(self, workload: Workload, progress: Progress | None = None) -> SimResult:
        return _Run(self, workload, progress).run()

    def __reduce__(self) -> tuple[type[Engine], tuple[EngineConfig, StepCost, float]]:
        """Pickled by its fields: a compiled build's frozen dataclass cannot be unpickled
        attribute by attribute (`setup.py`), and sweeps send engines to other processes."""
        return (Engine, (self.config, self.step_cost, self.first_token_delay_s))

    def start(self, workload: Workload, arrivals: Arrivals) -> _Run:
        """A run its caller drives: `advance(until_s)` as often as it likes, then `result()`.

        How a fleet interleaves its instances: `workload` is every request that may come
        (checked to fit), `arrivals` the ones routed here, added while the run goes.
        """
        return _Run(self, workload, None, arrivals)


def simulate(engine: Engine, workload: Workload) -> Sequence[RequestRecord]:
    """Run `workload` through `engine`; one record per request, in request-id order."""
    return engine.run(workload).records


def make_scheduler(cfg: EngineConfig, kv: KVCacheManager) -> Scheduler:
    if cfg.batching == "continuous":
        return ContinuousScheduler(
            kv,
            max_num_seqs=cfg.max_num_seqs,
            max_num_batched_tokens=cfg.max_num_batched_tokens,
            enable_chunked_prefill=cfg.enable_chunked_prefill,
            policy=cfg.schedule_policy,
            kv_reservation=cfg.kv_reservation,
            scheduler_recv_interval=cfg.scheduler_recv_interval,
            batch_wait=(cfg.batch_wait_timeout_iters, cfg.batch_wait_max_tokens_ratio),
            attention_dp=(
                cfg.num_attention_dp_ranks,
                cfg.attention_dp_timeout_iters,
                cfg.attention_dp_batching_wait_iters,
            )
            if cfg.attention_dp_enable_balance
            else None,
            overlap=cfg.overlap_scheduler,
        )
    timeout = cfg.batch_timeout_ms * MS if cfg.batching == "dynamic" else None
    return StaticScheduler(kv, max_num_seqs=cfg.max_num_seqs, batch_timeout_s=timeout)


class _Run:
    """One simulation: mutable state kept apart from the immutable `Engine`."""

    def __init__(
        self,
        engine: Engine,
        workload: Workload,
        progress: Progress | None,
        arrivals: Arrivals | None = None,
    ) -> None:
        cfg = engine.config
        check_fits(cfg, workload)
        self.cost = engine.step_cost
        self.decode_cost = decode_step_cost(engine.step_cost)
        # a cost's prices of many decode steps at once, and what it is told of those that ran
        self.decode_run_s = getattr(engine.step_cost, "decode_run_s", None)
        self.decode_ran = getattr(engine.step_cost, "decode_ran", None)
        self.first_token_delay_s = engine.first_token_delay_s
        self.cfg = cfg
        self.progress = progress
        if arrivals is None:
            arrivals = Arrivals(workload, cfg.block_size, cfg.enable_prefix_caching)
        self.arrivals = arrivals
        self.refills = arrivals.refills  # else a finish leaves the next arrival as it was
        self.kv = KVCacheManager(
            cfg.num_gpu_blocks,
            cfg.block_size,
            enable_prefix_caching=cfg.enable_prefix_caching,
            blocks_per_hash=self.arrivals.blocks_per_hash,
        )
        self.scheduler = make_scheduler(cfg, self.kv)
        self.log = StepLogBuilder()
        self.finished = FinishedLog()
        self.num_requests = workload.num_requests
        self.now = 0.0

    def run(self) -> SimResult:
        self.advance(None)
        return self.result()

    def advance(self, until_s: float | None) -> None:
        """Decide a batch, price it, apply it; when idle, jump to the next event.

        Stops before the first step that would start at or after `until_s` (an idle engine
        waits at `until_s`); `None` runs until nothing is left to do. Python's cyclic garbage
        collector is paused meanwhile (and restored after): a run makes no reference cycles,
        yet the collector would otherwise rescan every live request (40 % of a 1M-request
        run's time, issue 13).
        """
        collecting = gc.isenabled()
        gc.disable()
        try:
            self._advance(until_s)
        finally:
            if collecting:
                gc.enable()

    def _advance(self, until_s: float | None) -> None:
        arrivals, scheduler, cost = self.arrivals, self.scheduler, self.cost
        # The step log's row, written inline: this loop runs once per simulated step.
        log_times, log_counts = self.log.times.extend, self.log.counts.extend
        running, waiting, kv = scheduler.running, scheduler.waiting, self.kv
        step = self.log.num_steps
        now = self.now
        next_arrival = arrivals.next_s()
        while until_s is None or now < until_s:
            if next_arrival is not None and next_arrival <= now:
                for r in arrivals.pop_until(now):
                    scheduler.add(r, now)
                next_arrival = arrivals.next_s()
            if scheduler.decodes_only():
                now, ran, next_arrival = self._decode_steps(now, until_s, next_arrival, step)
                if ran:  # else the next step preempts: `schedule` decides it
                    step += ran
                    continue
            out = scheduler.schedule(now, next_arrival)
            if out is None:
                wake = self._next_wakeup(now)
                if until_s is not None and (wake is None or wake > until_s):
                    now = until_s
                    break
                if wake is None:
                    break
                now = wake
                continue
            end = now + cost(out.batch)
            padding = out.num_padding_seqs
            log_times((now, end))
            log_counts(
                (
                    out.num_prefill_tokens,
                    out.batch.num_decode_seqs,
                    padding,
                    len(running) + padding,
                    len(waiting),
                    kv.num_used,
                    out.decoded,
                )
            )
            finished = scheduler.update(out, step)
            step += 1
            if finished:
                self._finish(finished, end)
                if self.refills:
                    next_arrival = arrivals.next_s()
            now = end
        self.now = now

    def _decode_steps(
        self, now: float, until_s: float | None, next_arrival: float | None, step: int
    ) -> tuple[float, int, float | None]:
        """Decode-only steps in a row from step index `step` (`Scheduler.decodes_only`: the
        common step at any load short of saturation), until an arrival is due, `until_s` is
        reached, the batch may change, or a step would preempt (left to `schedule`). Each
        step is the general path's arithmetic in its order, so the results are the same to
        the bit, without building a `SchedulerOutput`, and logged in the compact form
        (`StepLogBuilder`). Returns the time after the last step, the number of steps run
        and the next arrival's time."""
        scheduler, cost, kv, log = self.scheduler, self.decode_cost, self.kv, self.log
        decoding, running, waiting = scheduler.decoding, scheduler.running, scheduler.waiting
        members = decoding.members
        add_end, add_kv = log.decode_end_s.append, log.decode_kv_blocks.append
        ran = 0
        first, start = step, now  # the segment's (its batch does not change until a finish)
        row = (len(members), len(running), len(waiting))
        # Quiet runs are looked for after the first step (its price tells how many fit
        # before the next arrival) and after a finish (the count only shrinks in between),
        # and again after a run cut short by the KV blocks free.
        look = self.decode_run_s is not None
        step_s: float | None = None  # the last step's price
        while True:
            if look and step_s is not None:
                quiet = scheduler.quiet_decode_steps()
                skipped = 0
                if quiet >= MIN_QUIET_RUN:
                    now, skipped = self._quiet_run(now, quiet, until_s, next_arrival, step_s)
                    ran += skipped
                look = 0 < skipped < quiet
            if not scheduler.book_decode_step():
                break
            step_s = cost(len(members), decoding.num_context_tokens)
            end = now + step_s
            add_end(end)
            add_kv(kv.num_used)
            ran += 1
            finished = scheduler.end_decode_step()
            now = end
            if finished:
                log.add_segment(first, step + ran - first, row, start)
                first, start = step + ran, now
                row = (len(members), len(running), len(waiting))
                self._finish(finished, end)
                if self.refills:
                    next_arrival = self.arrivals.next_s()
                look = self.decode_run_s is not None
            if next_arrival is not None and next_arrival <= now:
                break
            if (until_s is not None and now >= until_s) or not scheduler.decodes_only():
                break
        if step + ran > first:
            log.add_segment(first, step + ran - first, row, start)
        return now, ran, next_arrival

    def _quiet_run(
        self,
        now: float,
        num_steps: int,
        until_s: float | None,
        next_arrival: float | None,
        step_s: float,
    ) -> tuple[float, int]:
        """Up to `num_steps` decode-only steps in which no request finishes
        (`Scheduler.quiet_decode_steps`), priced and logged at once, stopping before the
        first that would end at or after the next arrival or `until_s` (`_decode_steps`
        runs that one, then stops) or need a KV block that is not free (its booking may
        evict or preempt: left to the step by step path). The end times are the running
        sums `_decode_steps` makes, in its order (`numpy.cumsum` adds in sequence), so
        the log is the same to the bit. They are priced at once only when `MIN_QUIET_RUN`
        of them fit before the limit, by the price `step_s` of the step before (steps cost
        more as their context grows), and only as far as that says (`_quiet_ends`; an
        arrival often comes long before the next finish). Returns the time after the last
        step and the number of steps."""
        scheduler, kv = self.scheduler, self.kv
        limits = [t for t in (until_s, next_arrival) if t is not None]
        limit_s = min(limits) if limits else None
        fit = num_steps
        if limit_s is not None and step_s > 0:  # each step ends at least `step_s` later
            fit = min(num_steps, int((limit_s - now) / step_s) + 2)
        if fit < MIN_QUIET_RUN:  # the limit comes first: one by one costs less
            return now, 0
        ends = self._quiet_ends(now, num_steps, fit, limit_s)
        num = int(np.searchsorted(ends, limit_s)) if limit_s is not None else num_steps
        booked = scheduler.decode_blocks_booked(num)
        if booked is not None and kv.capacity is not None:
            num = int(np.searchsorted(booked, kv.capacity - kv.num_used, side="right"))
        if num == 0:
            return now, 0
        if self.decode_ran is not None:
            self.decode_ran(num)
        self.log.decode_end_s.frombytes(ends[:num].tobytes())
        used = array("q", (kv.num_used,)) * num
        if booked is None:
            scheduler.skip_decode_steps(num, 0)
        else:
            used = array("q", (booked[:num] + kv.num_used).tobytes())
            scheduler.skip_decode_steps(num, int(booked[num - 1]))
        self.log.decode_kv_blocks.extend(used)
        return float(ends[num - 1]), num

    def _quiet_ends(
        self, now: float, num_steps: int, num_priced: int, limit_s: float | None
    ) -> np.ndarray:
        """End times of the next quiet decode steps from `now` (`_quiet_run`): the first
        `num_priced`, or all `num_steps` if those all end before `limit_s` (they cost less
        than the step before said), priced again in one call: the last call's prices are
        those `decode_ran` is told ran. Each step's price and running sum are the whole
        run's, to the bit (`numpy.cumsum` adds in sequence)."""
        assert self.decode_run_s is not None
        decoding = self.scheduler.decoding
        n, context = len(decoding.members), decoding.num_context_tokens
        ends = np.cumsum(np.concatenate(([now], self.decode_run_s(n, context, num_priced))))
        if num_priced < num_steps and (limit_s is None or ends[-1] < limit_s):
            ends = np.cumsum(np.concatenate(([now], self.decode_run_s(n, context, num_steps))))
        return ends[1:]

    def _finish(self, finished: list[SimRequest], now: float) -> None:
        for r in finished:
            self.finished.add(r)
            self.arrivals.on_finish(now)
        done = len(self.finished)
        if self.progress is not None and done // 1000 != (done - len(finished)) // 1000:
            self.progress(done, self.num_requests)

    def _next_wakeup(self, now: float) -> float | None:
        times = [t for t in (self.arrivals.next_s(), self.scheduler.wakeup_s(now)) if t is not None]
        if times:
            return max(now, min(times))
        if self.scheduler.has_unfinished():  # pragma: no cover - guarded by check_fits
            raise RuntimeError("simulation stalled with requests that can never be scheduled")
        return None

    def first_tokens(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The requests finished so far: ids, arrival and first token times, as `result`'s
        records hold them, without building the step log (`token_times.first_tokens`)."""
        return first_tokens(self.finished, self.log.end_s(), self.first_token_delay_s)

    def result(self) -> SimResult:
        steps = self.log.build()
        if self.progress is not None:
            self.progress(len(self.finished), self.num_requests)
        return SimResult(
            records=record_table(self.finished, steps, self.first_token_delay_s),
            steps=steps,
            num_preemptions=self.scheduler.num_preemptions,
            peak_kv_blocks_used=self.kv.peak_used,
            num_kv_blocks=self.kv.capacity,
            holds_slots_until_batch_end=self.cfg.batching != "continuous",
        )


def check_fits(cfg: EngineConfig, workload: Workload) -> None:
    """Reject requests no configuration of this engine could ever run, naming the first."""
    total = workload.num_prompt_tokens + workload.num_output_tokens
    if cfg.num_gpu_blocks is not None:
        blocks = -(-total // cfg.block_size)
        bad = np.flatnonzero(blocks > cfg.num_gpu_blocks)
        if bad.size:
            i = int(bad[0])
            raise ValueError(
                f"request {i} needs {int(total[i])} tokens of KV cache "
                f"({int(blocks[i])} blocks) but only {cfg.num_gpu_blocks} blocks of "
                f"{cfg.block_size} tokens exist ({bad.size} such requests)"
            )
    if cfg.batching == "continuous" and not cfg.enable_chunked_prefill:
        bad = np.flatnonzero(workload.num_prompt_tokens > cfg.max_num_batched_tokens)
        if bad.size:
            i = int(bad[0])
            raise ValueError(
                f"request {i} has a {int(workload.num_prompt_tokens[i])}-token prompt, over "
                f"max_num_batched_tokens={cfg.max_num_batched_tokens} with chunked prefill off "
                f"({bad.size} such requests): enable chunked prefill or raise the budget"
            )
