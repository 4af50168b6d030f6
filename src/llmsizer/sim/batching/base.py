"""What every batching policy shares: the waiting queue, the running set, KV accounting, and
the rule that turns computed tokens into output tokens.

A policy's `schedule` decides a step and returns it as plain data (`SchedulerOutput`); the
engine prices the `Batch` and calls `update`, which applies the step: prompt chunks become
computed tokens, a closed gap yields a token, decoding requests advance by the clock.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from llmsizer.sim.batch import Batch
from llmsizer.sim.decode_set import DecodeSet
from llmsizer.sim.kv_cache import KVCacheManager
from llmsizer.sim.request import SimRequest, Status


class SchedulerOutput:
    """One step as decided: the batch to price, the prompt chunks to apply, whether decodes ran.

    A plain class rather than a dataclass: one is built per simulated step, and a compiled
    engine (`setup.py`) builds a plain class natively but calls a dataclass's generated
    `__init__` as Python.
    """

    __slots__ = ("batch", "decoded", "num_padding_seqs", "num_prefill_tokens", "prefills")

    def __init__(
        self,
        batch: Batch,
        prefills: list[tuple[SimRequest, int]] | None = None,
        decoded: bool = False,
        num_padding_seqs: int = 0,
        num_prefill_tokens: int = 0,
    ) -> None:
        self.batch = batch
        self.prefills: list[tuple[SimRequest, int]] = [] if prefills is None else prefills
        self.decoded = decoded
        self.num_padding_seqs = num_padding_seqs
        self.num_prefill_tokens = num_prefill_tokens


class Scheduler:
    """Base class: state and state transitions. Subclasses implement `schedule`."""

    def __init__(self, kv: KVCacheManager, max_num_seqs: int) -> None:
        self.kv = kv
        self.max_num_seqs = max_num_seqs
        self.waiting: deque[SimRequest] = deque()
        self.running: dict[SimRequest, None] = {}  # admission order = priority order
        self.prefilling: list[SimRequest] = []
        self.decoding = DecodeSet(kv.block_size)
        self.num_preemptions = 0
        # True while the decode set's blocks for the step being scheduled are already booked.
        self.decode_blocks_reserved = False

    # -- the engine's view ---------------------------------------------------------------
    def add(self, r: SimRequest, now: float | None = None) -> None:
        """`r` joins the waiting queue; `now` is the engine's time (the end of the last step)."""
        self.waiting.append(r)

    @property
    def num_waiting(self) -> int:
        return len(self.waiting)

    @property
    def num_running(self) -> int:
        return len(self.running)

    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running)

    def wakeup_s(self, now: float) -> float | None:
        """A time at which the policy wants to be asked again with no new arrival (timeouts)."""
        return None

    def schedule(self, now: float, next_arrival_s: float | None) -> SchedulerOutput | None:
        raise NotImplementedError

    # -- decode-only steps, without a SchedulerOutput (`Engine`'s `_decode_steps`) -------
    def decodes_only(self) -> bool:
        """Whether the next step runs only the decoding requests, whatever its timing: no
        prompt in progress, and nothing waiting that could join. A policy that cannot tell
        says False, and every step goes through `schedule` and `update`."""
        return False

    def book_decode_step(self) -> bool:
        """KV blocks for a decode-only step's tokens, as `schedule` books them; False (and
        nothing booked) when that would preempt, which only `schedule` does."""
        need = self.decoding.num_blocks_needed()
        return not need or self.kv.allocate(need)

    def end_decode_step(self) -> list[SimRequest]:
        """Apply a decode-only step as `update` does; return the requests it finished."""
        done = self.decoding.advance()
        for r in done:
            self._release(r)
            r.status = Status.FINISHED
        return done

    def quiet_decode_steps(self) -> int:
        """Decode-only steps from now in which no request finishes (`skip_decode_steps`)."""
        return self.decoding.num_quiet_steps()

    def decode_blocks_booked(self, num_steps: int) -> np.ndarray | None:
        """KV blocks `book_decode_step` would book in all by the end of each of the next
        `num_steps` quiet steps (running sums); None when it books none."""
        return np.cumsum(self.decoding.blocks_needed(num_steps))

    def skip_decode_steps(self, num_steps: int, num_blocks: int) -> None:
        """Apply `num_steps` quiet decode-only steps (`quiet_decode_steps`) booking
        `num_blocks` in all, as `book_decode_step` and `end_decode_step` would one by one;
        the caller checked the blocks are free (no prefix block evicted for them)."""
        if num_blocks:
            self.kv.allocate(num_blocks)
        self.decoding.skip(num_steps)

    def update(self, out: SchedulerOutput, step_index: int) -> list[SimRequest]:
        """Apply a finished step; return requests that produced their last token in it."""
        done = self.decoding.advance() if out.decoded else []
        for r, n in out.prefills:
            r.num_computed_tokens += n
            if r.num_remaining_prefill > 0:
                continue
            self.prefilling.remove(r)
            r.num_generated += 1
            r.runs.append((step_index, self.decoding.clock, 0))
            self._cache_prompt_blocks(r)
            if r.num_generated >= r.num_output_tokens:
                done.append(r)
            else:
                self.decoding.add(r)
        self.decode_blocks_reserved = False
        for r in done:
            self._release(r)
            r.status = Status.FINISHED
        return done

    # -- transitions ---------------------------------------------------------------------
    def _admit(self, r: SimRequest, now: float) -> None:
        self.waiting.popleft()
        self.running[r] = None
        self.prefilling.append(r)
        r.status = Status.PREFILLING
        if r.scheduled_s is None:
            r.scheduled_s = now

    def _lookup_prefix(self, r: SimRequest) -> int:
        """Reference the cached leading blocks of `r`'s prompt; returns how many hashes hit."""
        k = self.kv.num_cached_prefix(r.block_hashes)
        if k:
            hashes = r.block_hashes[:k]
            self.kv.acquire(hashes)
            r.cache_refs = list(hashes)
            cached = k * self.kv.blocks_per_hash * self.kv.block_size
            r.num_computed_tokens = min(cached, r.num_tokens - 1)  # at least one token to run
        if r.num_preemptions == 0:
            r.num_cached_tokens = r.num_computed_tokens
        return k

    def _undo_lookup(self, r: SimRequest) -> None:
        self.kv.release(r.cache_refs)
        r.cache_refs = []
        r.num_computed_tokens = 0

    def _num_blocks_held(self, r: SimRequest) -> int:
        return r.num_blocks + len(r.cache_refs) * self.kv.blocks_per_hash

    def _cache_prompt_blocks(self, r: SimRequest) -> None:
        """Offer `r`'s computed full prompt blocks to the prefix cache (they stop being private)."""
        new = r.block_hashes[len(r.cache_refs) :]
        num_registered = self.kv.register(new)
        if num_registered:
            r.cache_refs.extend(new[:num_registered])
            r.num_blocks -= num_registered * self.kv.blocks_per_hash

    def _release(self, r: SimRequest) -> None:
        """Give back `r`'s blocks. Decoding requests' growth was booked in aggregate, so their
        private share is recovered from the tokens they hold (plus the slot booked for the
        step being scheduled, when they are preempted after it was booked)."""
        booked = 1 if r.status is Status.DECODING and self.decode_blocks_reserved else 0
        grown = self.kv.blocks_for(r.num_computed_tokens + booked) - self._num_blocks_held(r)
        r.num_blocks += max(grown, 0)
        self.kv.free(r.num_blocks)
        self.kv.release(r.cache_refs)
        r.num_blocks = 0
        r.cache_refs = []
        del self.running[r]

    def _preempt_last(self) -> SimRequest:
        """Recompute preemption of the lowest-priority running request (vLLM's default)."""
        r = next(reversed(self.running))
        if r.status is Status.DECODING:
            self.decoding.remove(r)
        else:
            self.prefilling.remove(r)
        self._release(r)  # reads the status: set WAITING only after
        r.status = Status.WAITING
        r.num_computed_tokens = 0
        r.num_preemptions += 1
        self.num_preemptions += 1
        self.waiting.appendleft(r)
        return r
