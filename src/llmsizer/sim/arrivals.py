"""Requests entering the engine: open loop from arrival times, or closed loop by completions.

Also turns a workload's shared prefixes into the block hashes the prefix cache reads: a
trace's `hash_ids` (each covering `prefix_block_tokens` tokens) or a system prompt shared by
every request (one hash per KV block it fills).
"""

from __future__ import annotations

import heapq

from llmsizer.sim.request import SimRequest
from llmsizer.workload import Workload


class Arrivals:
    def __init__(self, workload: Workload, block_size: int, enable_prefix_caching: bool) -> None:
        self.w = workload
        self.isl = workload.num_prompt_tokens.tolist()
        self.osl = workload.num_output_tokens.tolist()
        self.times = None if workload.arrival_s is None else workload.arrival_s.tolist()
        self.next_id = 0
        self.pending: list[tuple[float, int]] = []  # closed loop: (arrival time, id)
        self.blocks_per_hash, self.hash_tokens = self._hash_geometry(workload, block_size)
        self.system_hashes = tuple(
            -(j + 1) for j in range(workload.system_prompt_tokens // block_size)
        )
        self.use_hashes = enable_prefix_caching
        if self.times is None:
            first = min(workload.concurrency or 1, workload.num_requests)
            self.pending = [(0.0, i) for i in range(first)]
            self.next_id = first

    @staticmethod
    def _hash_geometry(w: Workload, block_size: int) -> tuple[int, int]:
        if w.prefix_hashes is None:
            return 1, block_size
        if w.prefix_block_tokens % block_size:
            raise ValueError(
                f"prefix_block_tokens={w.prefix_block_tokens} is not a multiple of "
                f"block_size={block_size}; choose a block_size that divides it"
            )
        return w.prefix_block_tokens // block_size, w.prefix_block_tokens

    @property
    def refills(self) -> bool:
        """Whether a finish can bring an arrival (closed loop, `on_finish`): otherwise only
        `pop_until` changes `next_s` while the engine runs."""
        return self.times is None

    def next_s(self) -> float | None:
        """When the next request arrives, if that is known yet."""
        if self.times is not None:
            return self.times[self.next_id] if self.next_id < len(self.times) else None
        return self.pending[0][0] if self.pending else None

    def pop_until(self, now: float) -> list[SimRequest]:
        out: list[SimRequest] = []
        if self.times is not None:
            while self.next_id < len(self.times) and self.times[self.next_id] <= now:
                out.append(self._make(self.next_id, self.times[self.next_id]))
                self.next_id += 1
        else:
            while self.pending and self.pending[0][0] <= now:
                t, i = heapq.heappop(self.pending)
                out.append(self._make(i, t))
        return out

    def on_finish(self, now: float) -> None:
        """Closed loop: a finished request is replaced at once by the next one."""
        if self.times is None and self.next_id < len(self.isl):
            heapq.heappush(self.pending, (now, self.next_id))
            self.next_id += 1

    def _make(self, i: int, t: float) -> SimRequest:
        return SimRequest(i, t, self.isl[i], self.osl[i], self._hashes(i))

    def _hashes(self, i: int) -> tuple[int, ...]:
        if not self.use_hashes:
            return ()
        if self.w.prefix_hashes is not None:
            return self.w.prefix_hashes[i][: self.isl[i] // self.hash_tokens]
        return self.system_hashes
