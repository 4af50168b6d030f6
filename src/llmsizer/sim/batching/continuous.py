"""In-flight (continuous) batching: Orca's iteration-level scheduling with vLLM's knobs.

Every step: finished requests have left, running requests continue, and waiting requests join
while the step's token budget (`max_num_batched_tokens`), the batch's slots (`max_num_seqs`)
and the KV cache allow. Two orders engines actually use:

- `decode_first` (vLLM v1, TensorRT-LLM): every decoding request gets its token first, prompt
  chunks fill the rest of the budget, so decodes never stall behind a long prompt.
- `prefill_first` (SGLang's default without mixed chunks): when prompt work can be scheduled,
  the step runs only prompt tokens and decoding requests wait a step.

KV blocks are either allocated as tokens are scheduled (`incremental`, vLLM and SGLang: a
request that cannot grow preempts the lowest-priority running request, which recomputes
later) or reserved for prompt plus maximum output at admission (`full`, TensorRT-LLM's
GUARANTEED_NO_EVICT: no preemption, fewer requests at once), or allocated as scheduled and
admitted only while every running request can still decode to its end (`projected`, SGLang's
admission of ignore-EOS requests with the radix cache off,
`llmsizer.sim.batching.projected_kv`: a refused request waits until one finishes).

`scheduler_recv_interval` N (SGLang's `--scheduler-recv-interval`, `SchedulerRecvSkipper`
with its default weights: a decode step 1, an idle loop 1, any other step 1000): the scheduler
reads new requests from its input socket after N decode steps since its last read, or right
after a step with prompt work; an idle engine reads at once (its loop spins). A request read
and not yet admitted waits in the scheduler's queue and may join any step. 1 reads every step.

`batch_wait` (timeout N steps, token ratio r; TensorRT-LLM's `batch_wait_timeout_iters` /
`batch_wait_max_tokens_ratio`, `PyExecutor._waiting_requests`): while requests decode, new
prompts are held until the step would carry r x `max_num_batched_tokens` tokens or N steps
have been held since the last release; an engine with nothing decoding never waits. Off when
both are 0.

`overlap` (TensorRT-LLM's overlap scheduler, `llmsizer.sim.batching.overlap`; vLLM's async
scheduling and SGLang's overlap loop schedule one step ahead the same way): while requests
are in flight, a request is admitted at the earliest into the second step after the one it
arrived in (the third when it arrives as a step ends: a closed loop's next request), and a
request that finished in a step holds its slot in the next; a receive interval's reads take
only the requests fetched. Off by default.

`attention_dp` (D ranks, timeout T steps, batching wait W steps; TensorRT-LLM's
`attention_dp_config` with `enable_balance`): the engine stands for D attention data-parallel
ranks, and new prompts are held until every rank has one, or the timeout
(`llmsizer.sim.batching.attention_dp`). Off when None.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from llmsizer.sim.batch import Batch, PrefillChunk, make_batch
from llmsizer.sim.batching.attention_dp import AttentionDpBalance
from llmsizer.sim.batching.base import Scheduler, SchedulerOutput
from llmsizer.sim.batching.overlap import OverlapAdmission
from llmsizer.sim.batching.projected_kv import fits_projected
from llmsizer.sim.kv_cache import KVCacheManager
from llmsizer.sim.request import SimRequest

SchedulePolicy = Literal["decode_first", "prefill_first"]
KvReservation = Literal["incremental", "full", "projected"]


class ContinuousScheduler(Scheduler):
    def __init__(
        self,
        kv: KVCacheManager,
        *,
        max_num_seqs: int,
        max_num_batched_tokens: int,
        enable_chunked_prefill: bool = True,
        policy: SchedulePolicy = "decode_first",
        kv_reservation: KvReservation = "incremental",
        scheduler_recv_interval: int = 1,
        batch_wait: tuple[int, float] = (0, 0.0),
        attention_dp: tuple[int, int, int] | None = None,
        overlap: bool = False,
    ) -> None:
        super().__init__(kv, max_num_seqs)
        self.overlap = OverlapAdmission() if overlap else None
        self.balance: AttentionDpBalance | None = None
        if attention_dp is not None and attention_dp[0] > 1:
            ranks, timeout, wait = attention_dp
            self.balance = AttentionDpBalance(ranks, max(max_num_seqs // ranks, 1), timeout, wait)
        self.recv_interval = scheduler_recv_interval
        self.num_unread_steps = 0  # decode steps since the last read (SGLang's skipper count)
        self.read_next = False  # the last step had prompt work: the next one reads
        self.num_read = 0  # the leading waiting requests the scheduler has read
        self.wait_steps, wait_ratio = batch_wait
        self.wait_tokens = wait_ratio * max_num_batched_tokens
        self.batch_waiting = self.wait_steps > 0 or wait_ratio > 0
        self.num_steps_held = 0
        self.num_steps = 0
        self.max_num_batched_tokens = max_num_batched_tokens
        self.enable_chunked_prefill = enable_chunked_prefill
        self.policy = policy
        self.kv_reservation = kv_reservation
        self.decode_first = policy == "decode_first"  # read every step: compared once here
        self.reserve_full = kv_reservation == "full"
        self.projected = kv_reservation == "projected"
        # The waiting request a decode-only step refused, and the running count then
        # (`decodes_only`); reset by every `schedule`.
        self.refused: SimRequest | None = None
        self.refused_running = 0

    def schedule(self, now: float, next_arrival_s: float | None) -> SchedulerOutput | None:
        self.decode_blocks_reserved = False
        self.refused = None
        preemptions_before = self.num_preemptions
        budget = self.max_num_batched_tokens
        decoding = self.decoding.members
        decode_first = self.decode_first
        if decoding and decode_first:
            self._grow_decodes()
            budget -= len(decoding)
        prefills = (
            self._schedule_prefills(budget, now, preemptions_before)
            if self.prefilling or self.waiting
            else []
        )
        if decoding and not decode_first and not prefills:
            self._grow_decodes()
        run_decodes = bool(decoding) and (decode_first or not prefills)
        if not prefills and not run_decodes:
            return None
        self.num_steps += 1
        if prefills:
            self.read_next = True
        elif self.recv_interval > 1:
            self._count_decode_step()
        if not prefills:  # most steps: decodes only
            batch = make_batch((), len(decoding), self.decoding.num_context_tokens)
            return SchedulerOutput(batch, prefills, True, 0, 0)
        chunks = tuple([PrefillChunk(n, r.num_computed_tokens) for r, n in prefills])
        num_prefill = sum([n for _, n in prefills])
        if not run_decodes:
            return SchedulerOutput(Batch(chunks), prefills, False, 0, num_prefill)
        batch = make_batch(chunks, len(decoding), self.decoding.num_context_tokens)
        return SchedulerOutput(batch, prefills, True, 0, num_prefill)

    def decodes_only(self) -> bool:
        """No prompt in progress and nothing waiting, or every slot taken (nothing can be
        admitted: the waiting queue is read only to admit), unless delay batching counts
        the steps it holds waiting prompts (it does in `schedule`, full batch or not); or
        the first waiting request is one a decode-only `schedule` refused (`_refuse`) with
        as many requests running: it is refused again until one finishes."""
        if self.prefilling or not self.decoding.members:
            return False
        if not self.waiting:
            return True
        if self.refused is self.waiting[0] and self.refused_running == len(self.running):
            return True
        return len(self.running) >= self.max_num_seqs and not self.batch_waiting

    def add(self, r: SimRequest, now: float | None = None) -> None:
        super().add(r, now)
        if self.balance is not None:
            self.balance.arrived(r)
        if self.overlap is not None:
            self.overlap.arrived(r, self.num_steps, now)

    def update(self, out: SchedulerOutput, step_index: int) -> list[SimRequest]:
        return self._left(super().update(out, step_index))

    def book_decode_step(self) -> bool:
        return self.reserve_full or super().book_decode_step()

    def end_decode_step(self) -> list[SimRequest]:
        self.num_steps += 1  # counted by `schedule` too
        if self.recv_interval > 1:
            self._count_decode_step()
        return self._left(super().end_decode_step())

    def _left(self, done: list[SimRequest]) -> list[SimRequest]:
        """`done`, the requests a step finished, told to the attention-DP balance and the
        overlap scheduler (a step's end, whichever path ran it)."""
        if self.balance is not None:
            for r in done:
                self.balance.left(r)
        if self.overlap is not None:
            self.overlap.finished(len(done))
        return done

    def _admit(self, r: SimRequest, now: float) -> None:
        super()._admit(r, now)
        if self.balance is not None:
            self.balance.admitted(r)
        if self.overlap is not None:
            self.overlap.admitted(r)

    def _preempt_last(self) -> SimRequest:
        r = super()._preempt_last()
        self.num_read += 1  # back in the scheduler's own queue, first
        if self.balance is not None:
            self.balance.requeued(r)
        return r

    def decode_blocks_booked(self, num_steps: int) -> np.ndarray | None:
        return None if self.reserve_full else super().decode_blocks_booked(num_steps)

    def skip_decode_steps(self, num_steps: int, num_blocks: int) -> None:
        self.num_steps += num_steps
        if self.recv_interval > 1:
            self._count_decode_step(num_steps)
        if self.overlap is not None:
            self.overlap.finished(0)  # quiet steps finish nobody
        super().skip_decode_steps(num_steps, num_blocks)

    def _grow_decodes(self) -> None:
        """Find a KV slot for every decoding request's next token, preempting when short."""
        if self.reserve_full:
            return
        decoding, kv = self.decoding, self.kv
        while (need := decoding.num_blocks_needed()) and not kv.allocate(need):
            self._preempt_last()
        # Booked in aggregate: each member's share is recovered from its token count when it
        # leaves the decode set (see `Scheduler._release`).
        self.decode_blocks_reserved = True

    def _schedule_prefills(
        self, budget: int, now: float, preemptions_before: int
    ) -> list[tuple[SimRequest, int]]:
        """Running prompts first, in priority order, then new requests (FCFS). As in vLLM, no
        request is admitted in a step that preempted one."""
        out: list[tuple[SimRequest, int]] = []
        for r in list(self.prefilling):
            if budget <= 0:
                return out
            n = self._chunk(r.num_remaining_prefill, budget)
            if n == 0 or r not in self.running:
                continue
            if not self._allocate_for(r, n):
                continue  # r itself was preempted
            out.append((r, n))
            budget -= n
        if self.num_preemptions != preemptions_before:
            return out
        readable = self._readable()
        if not readable:
            return out
        if self.batch_waiting and self.decoding.members and self._holds(out, budget):
            return out
        if self.balance is not None and self.waiting and self.balance.holds(self.num_steps):
            return out
        seats = self.max_num_seqs
        if self.overlap is not None and self.running:  # an idle executor takes it at once
            seats -= self.overlap.num_retiring
        while readable and budget > 0 and len(self.running) < seats:
            r = self.waiting[0]
            k = self._lookup_prefix(r)
            n = self._chunk(r.num_remaining_prefill, budget)
            need = self._blocks_to_admit(r, n)
            if n == 0 or (self.projected and not self._fits(r)) or not self.kv.allocate(need):
                if k:
                    self._undo_lookup(r)
                elif not out:
                    self._refuse(r, n)
                break
            r.num_blocks += need
            self._admit(r, now)
            out.append((r, n))
            readable -= 1
            self.num_read = max(self.num_read - 1, 0)
            budget -= n
        return out

    def _fits(self, r: SimRequest) -> bool:
        """SGLang's projected check (`projected_kv`): every request can still decode to its end."""
        free_tokens = self.kv.num_allocatable() * self.kv.block_size
        return fits_projected(free_tokens, r, self.running, self.decoding.clock)

    def _refuse(self, r: SimRequest, n: int) -> None:
        """Remember `r`, refused in a step with no prompt work, so that `decodes_only` can
        say the next steps are decode-only too, which holds until a request leaves: until
        then the token budget and the running count stay, free KV blocks only shrink (the
        decodes grow), and `r` found no cached prefix (`_undo_lookup` would touch the
        cache's LRU order), so none appears (prompts register theirs only as they finish).
        Not when delay batching would count a held step for `r` (`_holds`: it fits, `n` > 0)."""
        if n == 0 or not self.batch_waiting:
            self.refused, self.refused_running = r, len(self.running)

    def _holds(self, scheduled: list[tuple[SimRequest, int]], budget: int) -> bool:
        """Whether delay batching holds the waiting prompts this step (module docstring): the
        step's tokens counted as the engine would schedule them, prompts in order."""
        if not self.waiting:
            return False
        tokens = len(self.decoding.members) + sum([n for _, n in scheduled])
        slots = self.max_num_seqs - len(self.running)
        if self.overlap is not None and self.running:
            slots = max(slots - self.overlap.num_retiring, 0)
        admissible = 0
        for r in self.waiting:
            n = self._chunk(r.num_remaining_prefill, budget)
            if n == 0 or slots == 0:
                break
            tokens += n
            budget -= n
            slots -= 1
            admissible += 1
        if not admissible:  # no prompt fits this step: nothing to hold, no step counted
            return False
        if self.num_steps_held >= self.wait_steps or tokens >= self.wait_tokens:
            self.num_steps_held = 0
            return False
        self.num_steps_held += 1
        return True

    def _received(self, num_steps: int) -> int:
        """How many waiting requests (from the front) are fetched, `num_steps` steps begun."""
        if self.overlap is not None:
            return self.overlap.num_fetched(self.waiting, num_steps, bool(self.running))
        return len(self.waiting)

    def _readable(self) -> int:
        """How many waiting requests (from the front) the scheduler has read by this step
        (module docstring); a read takes those fetched by then (SGLang's overlap loop)."""
        if self.recv_interval <= 1:
            return self._received(self.num_steps)
        if self.read_next or not self.running:
            reads = True
        else:  # the reads of an empty socket since: one every N decode steps
            reads = self.num_unread_steps >= self.recv_interval
            if reads:
                reads = self.num_unread_steps % self.recv_interval == 0
                self.num_unread_steps %= self.recv_interval
        if reads:
            self.read_next = False
            self.num_unread_steps = 0
            self.num_read = self._received(self.num_steps)
        return self.num_read

    def _count_decode_step(self, num_steps: int = 1) -> None:
        """Decode steps for SGLang's skipper; a read before them if the last step had prompts."""
        if self.read_next:
            self.read_next = False
            self.num_unread_steps = 0
            self.num_read = self._received(self.num_steps - num_steps)  # before these steps
        self.num_unread_steps += num_steps

    def _chunk(self, remaining: int, budget: int) -> int:
        if self.enable_chunked_prefill:
            return min(remaining, budget)
        return remaining if remaining <= budget else 0

    def _blocks_to_admit(self, r: SimRequest, n: int) -> int:
        total = r.num_tokens + r.num_output_tokens - r.num_generated
        tokens = total if self.reserve_full else r.num_computed_tokens + n
        return self.kv.blocks_for(tokens) - self._num_blocks_held(r)

    def _allocate_for(self, r: SimRequest, n: int) -> bool:
        """Blocks for `n` more tokens of a running prompt; preempts others (or `r`) when short."""
        need = self.kv.blocks_for(r.num_computed_tokens + n) - self._num_blocks_held(r)
        while not self.kv.allocate(need):
            if self._preempt_last() is r:
                return False
        r.num_blocks += max(need, 0)
        return True
