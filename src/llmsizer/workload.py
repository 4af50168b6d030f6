"""Workloads: when requests arrive and how long their prompts and outputs are.

PLACEHOLDER INTERFACE (being implemented): a `Workload` is plain arrays, one entry per request.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True, eq=False)
class Workload:
    """Requests to run, as arrays indexed by request id.

    - `arrival_s`: arrival times, non-decreasing; `None` for a closed loop, where
      `concurrency` requests start at 0 and each finished request is replaced at once by the
      next one (no think time).
    - `num_prompt_tokens`, `num_output_tokens`: int64 arrays, each >= 1.
    - `prefix_hashes`: per request, ids of its prompt's leading blocks of
      `prefix_block_tokens` tokens each; equal ids mean an identical prefix (Mooncake's
      `hash_ids`). `None` when prompts share nothing.
    """

    num_prompt_tokens: np.ndarray
    num_output_tokens: np.ndarray
    arrival_s: np.ndarray | None = None
    concurrency: int | None = None
    prefix_hashes: tuple[tuple[int, ...], ...] | None = None
    prefix_block_tokens: int = 512

    @property
    def num_requests(self) -> int:
        return int(self.num_prompt_tokens.shape[0])
