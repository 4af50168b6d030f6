"""A request inside the simulated engine: tokens known versus tokens computed.

The one rule (vLLM v1's scheduler note): a request knows `num_tokens` tokens (its prompt plus
what it has generated) and has `num_computed_tokens` of them in the KV cache. A step closes
part of the gap. When the gap closes, the step's output is one new token. Prefill, chunked
prefill, decode, preemption (computed drops to the cached prefix) and prefix-cache hits
(computed starts above 0) all follow from that rule.

While a request is decoding its counters are *implicit* (see `DecodeSet`): they advance with
the engine's decode clock instead of being touched every step, so a step's cost in Python is
independent of the batch size.
"""

from __future__ import annotations

from enum import Enum


class Status(Enum):
    WAITING = "waiting"
    PREFILLING = "prefilling"
    DECODING = "decoding"
    FINISHED = "finished"


class SimRequest:
    """Mutable per-request state, owned by one scheduler. Times in seconds."""

    __slots__ = (
        "arrival_s",
        "block_hashes",
        "cache_refs",
        "decode_entry_clock",
        "finish_clock",
        "num_blocks",
        "num_cached_tokens",
        "num_computed_tokens",
        "num_generated",
        "num_output_tokens",
        "num_preemptions",
        "num_prompt_tokens",
        "request_id",
        "runs",
        "scheduled_s",
        "status",
    )

    def __init__(
        self,
        request_id: int,
        arrival_s: float,
        num_prompt_tokens: int,
        num_output_tokens: int,
        block_hashes: tuple[int, ...] = (),
    ) -> None:
        self.request_id = request_id
        self.arrival_s = arrival_s
        self.num_prompt_tokens = num_prompt_tokens
        self.num_output_tokens = num_output_tokens
        self.block_hashes = block_hashes  # hashes of full prompt blocks, in order
        self.status = Status.WAITING
        self.num_computed_tokens = 0
        self.num_generated = 0
        self.num_blocks = 0  # KV blocks held privately
        self.cache_refs: list[int] = []  # prefix-cache hashes this request references
        self.num_cached_tokens = 0
        self.num_preemptions = 0
        self.scheduled_s: float | None = None
        self.decode_entry_clock = 0
        self.finish_clock = 0
        # One run per (re)start: (global step of its first token, decode clock at entry,
        # number of decode tokens after the first). Turned into token times at the end.
        self.runs: list[tuple[int, int, int]] = []

    @property
    def num_tokens(self) -> int:
        """Tokens known: prompt plus generated output."""
        return self.num_prompt_tokens + self.num_generated

    @property
    def num_remaining_prefill(self) -> int:
        return self.num_tokens - self.num_computed_tokens
