"""Static and dynamic batching: a batch starts together and holds its slots to the end.

A batch of up to `max_num_seqs` requests runs one prefill step (every prompt padded to the
longest) and then decode steps until its longest output is done. Requests that finish early
keep computing as padding (their slot is occupied but its output is thrown away), and nobody
joins until the whole batch has finished: the grey cells of the course's picture.

- static: a batch launches when `max_num_seqs` requests wait (a client-formed batch), or when
  no more requests can arrive to fill it.
- dynamic: as static, but a partial batch also launches once its oldest request has waited
  `batch_timeout_s` (Triton's dynamic batcher `max_queue_delay`).

KV is reserved per slot for the padded prompt plus the longest output at launch (a static
engine preallocates its cache), so a batch never preempts; it shrinks until it fits.
"""

from __future__ import annotations

from llmsizer.sim.batch import Batch, PrefillChunk
from llmsizer.sim.batching.base import Scheduler, SchedulerOutput
from llmsizer.sim.kv_cache import KVCacheManager
from llmsizer.sim.request import SimRequest


class StaticScheduler(Scheduler):
    def __init__(
        self,
        kv: KVCacheManager,
        *,
        max_num_seqs: int,
        batch_timeout_s: float | None = None,
    ) -> None:
        super().__init__(kv, max_num_seqs)
        self.batch_timeout_s = batch_timeout_s  # None: static (wait for a full batch)
        self.batch: list[SimRequest] = []
        self.padded_prompt_len = 0
        self.num_batch_steps = 0

    def wakeup_s(self, now: float) -> float | None:
        if self.batch or not self.waiting or self.batch_timeout_s is None:
            return None
        return max(now, self.waiting[0].arrival_s + self.batch_timeout_s)

    def _should_launch(self, now: float, next_arrival_s: float | None) -> bool:
        if len(self.waiting) >= self.max_num_seqs or next_arrival_s is None:
            return bool(self.waiting)
        if self.batch_timeout_s is None or not self.waiting:
            return False
        return now >= self.waiting[0].arrival_s + self.batch_timeout_s

    def schedule(self, now: float, next_arrival_s: float | None) -> SchedulerOutput | None:
        if self.batch and not self.running:
            self.batch = []
        if not self.batch:
            if not self._should_launch(now, next_arrival_s):
                return None
            self._launch(now)
            chunk = PrefillChunk(self.padded_prompt_len, 0)
            prefills = [(r, r.num_remaining_prefill) for r in self.batch]
            chunks = (chunk,) * len(self.batch)
            return SchedulerOutput(
                Batch(chunks), prefills, num_prefill_tokens=len(chunks) * chunk.num_new_tokens
            )
        self.num_batch_steps += 1
        slots = len(self.batch)
        context = slots * (self.padded_prompt_len + self.num_batch_steps - 1)
        batch = Batch(num_decode_seqs=slots, num_decode_context_tokens=context)
        return SchedulerOutput(batch, decoded=True, num_padding_seqs=slots - len(self.decoding))

    def _launch(self, now: float) -> None:
        candidates = list(self.waiting)[: self.max_num_seqs]
        while candidates:
            prompt = max(r.num_prompt_tokens for r in candidates)
            output = max(r.num_output_tokens for r in candidates)
            per_slot = self.kv.blocks_for(prompt + output)
            if self.kv.allocate(per_slot * len(candidates)):
                break
            candidates.pop()
        if not candidates:
            r = self.waiting[0]
            raise ValueError(
                f"request {r.request_id} ({r.num_prompt_tokens} + {r.num_output_tokens} tokens) "
                f"does not fit in the KV cache ({self.kv.capacity} blocks of "
                f"{self.kv.block_size} tokens)"
            )
        self.padded_prompt_len = prompt
        self.num_batch_steps = 0
        for r in candidates:
            self._admit(r, now)
            r.num_blocks = per_slot
        self.batch = candidates

    def update(self, out: SchedulerOutput, step_index: int) -> list[SimRequest]:
        done = super().update(out, step_index)
        if not self.running:
            self.batch = []
        return done
