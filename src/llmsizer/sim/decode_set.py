"""The set of decoding requests, advanced by a clock instead of one by one.

Every decoding request gains one token per decode step, so its counters are a function of
the engine's *decode clock* `clock` (the number of steps that ran decodes so far):

    entry: clock = c0, computed = k0, generated = g0
    now:   computed = k0 + (clock - c0), generated = g0 + (clock - c0)
    done:  clock = c0 + (num_output_tokens - g0)      -> a heap keyed by that clock

KV growth is also aggregated: a request needs a new block in the step where its computed
count is a multiple of `block_size`, i.e. when (k0 - c0 + clock) % block_size == 0, so
requests are bucketed by (k0 - c0) % block_size and a step needs `buckets[-clock % bs]`
blocks. A step therefore costs O(1) plus O(log n) per request that finishes.
"""

from __future__ import annotations

import heapq

import numpy as np

from llmsizer.sim.request import SimRequest, Status


class DecodeSet:
    def __init__(self, block_size: int) -> None:
        self.block_size = block_size
        self.clock = 0
        self.num_context_tokens = 0  # sum of computed tokens over members, at `clock`
        self.members: dict[SimRequest, None] = {}  # insertion-ordered set
        self._buckets = [0] * block_size
        self._heap: list[tuple[int, int, SimRequest]] = []  # (finish clock, id, request)

    def __len__(self) -> int:
        return len(self.members)

    def _bucket(self, r: SimRequest) -> int:
        return (r.num_computed_tokens - r.decode_entry_clock) % self.block_size

    def add(self, r: SimRequest) -> None:
        """Enter decode with the counters `r` holds now (the first token already generated)."""
        r.status = Status.DECODING
        r.decode_entry_clock = self.clock
        r.finish_clock = self.clock + r.num_output_tokens - r.num_generated
        self.members[r] = None
        self._buckets[self._bucket(r)] += 1
        self.num_context_tokens += r.num_computed_tokens
        heapq.heappush(self._heap, (r.finish_clock, r.request_id, r))

    def sync(self, r: SimRequest) -> None:
        """Materialise `r`'s implicit counters (before it leaves the set)."""
        steps = self.clock - r.decode_entry_clock
        r.num_computed_tokens += steps
        r.num_generated += steps
        r.decode_entry_clock = self.clock
        first_step, entry_clock, _ = r.runs[-1]
        r.runs[-1] = (first_step, entry_clock, self.clock - entry_clock)

    def remove(self, r: SimRequest) -> None:
        """Take `r` out early (preemption); its heap entry goes stale and is skipped later."""
        self._buckets[self._bucket(r)] -= 1
        del self.members[r]
        self.sync(r)
        self.num_context_tokens -= r.num_computed_tokens

    def num_blocks_needed(self) -> int:
        """New KV blocks the next decode step needs (one per member crossing a block edge)."""
        return self._buckets[-self.clock % self.block_size]

    def num_quiet_steps(self) -> int:
        """Decode steps from now in a row in which no member finishes (at most: a
        preempted member's stale heap entry may end the count early)."""
        return self._heap[0][0] - self.clock - 1 if self._heap else 0

    def blocks_needed(self, num_steps: int) -> np.ndarray:
        """`num_blocks_needed` of each of the next `num_steps` steps, no member leaving."""
        bs = self.block_size
        edges = [self._buckets[-(self.clock + j) % bs] for j in range(bs)]
        return np.resize(np.array(edges, dtype=np.int64), num_steps)

    def skip(self, num_steps: int) -> None:
        """`num_steps` steps ran in which no member finished: `advance` each time, at once."""
        self.num_context_tokens += len(self.members) * num_steps
        self.clock += num_steps

    def advance(self) -> list[SimRequest]:
        """One decode step ran: tick the clock, return members that produced their last token."""
        self.num_context_tokens += len(self.members)
        self.clock += 1
        done: list[SimRequest] = []
        heap = self._heap
        while heap and heap[0][0] <= self.clock:
            finish_clock, _, r = heapq.heappop(heap)
            if r.finish_clock != finish_clock or r not in self.members:
                continue  # stale: the request was preempted after this entry was pushed
            self._buckets[self._bucket(r)] -= 1
            del self.members[r]
            self.sync(r)
            self.num_context_tokens -= r.num_computed_tokens
            done.append(r)
        return done
