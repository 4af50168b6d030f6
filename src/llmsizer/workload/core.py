"""The `Workload`: when requests arrive and how long their prompts and outputs are, as arrays."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True, eq=False)
class Workload:
    """Requests to run, as arrays indexed by request id.

    - `arrival_s`: arrival times in seconds, non-decreasing; `None` for a closed loop, where
      `concurrency` requests start at 0 and each finished request is replaced at once by the
      next one (no think time). `concurrency` is set exactly when `arrival_s` is `None`.
    - `num_prompt_tokens`, `num_output_tokens`: int64 arrays, each >= 1. Prompt lengths
      include the shared system prompt.
    - `prefix_hashes`: per request, ids of its prompt's leading blocks of
      `prefix_block_tokens` tokens each; equal ids mean an identical prefix (Mooncake's
      `hash_ids`). `None` when prompts share nothing.
    - `system_prompt_tokens`: the first this many tokens of every prompt are identical (a
      shared system prompt a prefix cache can reuse); 0 for none. A workload describes shared
      prefixes either this way or by `prefix_hashes`, not both.
    - `source`: where the workload came from, in words, for reports.

    Construction checks these invariants and raises `ValueError` naming the broken one.
    """

    num_prompt_tokens: np.ndarray
    num_output_tokens: np.ndarray
    arrival_s: np.ndarray | None = None
    concurrency: int | None = None
    prefix_hashes: tuple[tuple[int, ...], ...] | None = None
    prefix_block_tokens: int = 512
    system_prompt_tokens: int = 0
    source: str = ""

    def __post_init__(self) -> None:
        num = self.num_requests
        for name in ("num_prompt_tokens", "num_output_tokens"):
            _check_lengths(name, getattr(self, name), num)
        if self.arrival_s is None:
            if self.concurrency is None or self.concurrency < 1:
                raise ValueError(
                    f"a closed-loop workload (arrival_s None) needs concurrency >= 1, "
                    f"got {self.concurrency}"
                )
        else:
            _check_arrivals(self.arrival_s, num)
            if self.concurrency is not None:
                raise ValueError(
                    f"concurrency={self.concurrency} applies only to a closed loop "
                    "(arrival_s None); this workload has arrival times"
                )
        if self.prefix_hashes is not None and len(self.prefix_hashes) != num:
            raise ValueError(
                f"prefix_hashes has {len(self.prefix_hashes)} entries for {num} requests"
            )
        if self.prefix_block_tokens < 1:
            raise ValueError(f"prefix_block_tokens must be >= 1, got {self.prefix_block_tokens}")
        self._check_system_prompt()

    def _check_system_prompt(self) -> None:
        if self.system_prompt_tokens < 0:
            raise ValueError(f"system_prompt_tokens must be >= 0, got {self.system_prompt_tokens}")
        if self.system_prompt_tokens == 0:
            return
        if self.prefix_hashes is not None:
            raise ValueError(
                "give shared prefixes by prefix_hashes or by system_prompt_tokens, not both"
            )
        shortest = int(self.num_prompt_tokens.min()) if self.num_requests else 0
        if self.num_requests and shortest < self.system_prompt_tokens:
            raise ValueError(
                f"a prompt of {shortest} tokens is shorter than the shared system prompt "
                f"({self.system_prompt_tokens} tokens)"
            )

    @property
    def num_requests(self) -> int:
        return int(self.num_prompt_tokens.shape[0])

    @property
    def is_closed_loop(self) -> bool:
        return self.arrival_s is None

    @property
    def span_s(self) -> float | None:
        """Seconds from the first arrival to the last; `None` for a closed loop or no requests."""
        if self.arrival_s is None or self.num_requests == 0:
            return None
        return float(self.arrival_s[-1] - self.arrival_s[0])

    def head(self, num_requests: int) -> Workload:
        """The first `num_requests` requests (all of them when there are fewer)."""
        if num_requests < 0:
            raise ValueError(f"num_requests must be >= 0, got {num_requests}")
        hashes = self.prefix_hashes
        return dataclasses.replace(
            self,
            num_prompt_tokens=self.num_prompt_tokens[:num_requests],
            num_output_tokens=self.num_output_tokens[:num_requests],
            arrival_s=None if self.arrival_s is None else self.arrival_s[:num_requests],
            prefix_hashes=None if hashes is None else hashes[:num_requests],
        )

    def with_time_scale(self, time_scale: float) -> Workload:
        """Every gap between arrivals multiplied by `time_scale` (10: ten times slower, a tenth
        of the request rate), keeping the first arrival where it is."""
        if not time_scale > 0 or not np.isfinite(time_scale):
            raise ValueError(f"time_scale must be a finite number > 0, got {time_scale}")
        if self.arrival_s is None or self.num_requests == 0:
            return self
        start = self.arrival_s[0]
        return dataclasses.replace(self, arrival_s=start + (self.arrival_s - start) * time_scale)


def _check_lengths(name: str, lengths: np.ndarray, num_requests: int) -> None:
    if lengths.ndim != 1 or lengths.shape[0] != num_requests:
        raise ValueError(f"{name} must be 1-D with {num_requests} entries, got {lengths.shape}")
    if not np.issubdtype(lengths.dtype, np.integer):
        raise ValueError(f"{name} must hold integers, got dtype {lengths.dtype}")
    if num_requests and lengths.min() < 1:
        first = int(np.argmax(lengths < 1))
        raise ValueError(f"{name}[{first}] = {lengths[first]}; token counts must be >= 1")


def _check_arrivals(arrival_s: np.ndarray, num_requests: int) -> None:
    if arrival_s.ndim != 1 or arrival_s.shape[0] != num_requests:
        raise ValueError(
            f"arrival_s must be 1-D with {num_requests} entries, got {arrival_s.shape}"
        )
    if not np.all(np.isfinite(arrival_s)):
        raise ValueError("arrival_s must be finite")
    backwards = np.diff(arrival_s) < 0
    if backwards.any():
        first = int(np.argmax(backwards)) + 1
        raise ValueError(
            f"arrival_s must be non-decreasing: arrival_s[{first}] = {arrival_s[first]} "
            f"< arrival_s[{first - 1}] = {arrival_s[first - 1]}"
        )


def read_only(array: np.ndarray) -> np.ndarray:
    """`array`, made read-only, so a frozen `Workload` cannot be changed through it."""
    array.setflags(write=False)
    return array
