"""What a streamed OpenAI-style response says: which chunks carry tokens, and when each token came.

Pure functions over decoded JSON payloads; the client feeds them, and the importers reuse
`assign_token_times` so that measured and imported records follow one rule.

Which chunk carries tokens
--------------------------
- `/v1/completions`: every chunk with a non-empty `choices` list. Its `text` may be empty: a
  token that ends inside a multi-byte character decodes to nothing, but it is still a token.
- `/v1/chat/completions`: a chunk that carries a `finish_reason`, or whose `delta` has
  non-empty content (`content`, `reasoning_content`, `reasoning`, `tool_calls`), or has a
  content key without a `role` (vLLM sends `{"content": ""}` for a token that decodes to
  nothing). The opening `{"role": "assistant", "content": ""}` carries none.
- A chunk with `choices: []` and a `usage` object is the closing usage report
  (`stream_options.include_usage`); vLLM also puts cumulative `usage` in every chunk when
  asked for `stream_options.continuous_usage_stats`, which tells how many tokens each chunk
  carried.

Token times
-----------
The server's `usage.completion_tokens` (N) is the token count. A chunk's tokens all reached
the client when the chunk did. When per-chunk counts are unknown each token-bearing chunk is
taken to carry one token, and the counts are reconciled with N:

    chunks:  c1   c2   c3 ........ cM           (times of token-bearing chunks)
    M < N:   t1=c1, ..., t(M-1)=c(M-1), and tM = ... = tN = cM
             (the N-M tokens that arrived bundled are placed with the last chunk)
    M > N:   t1=c1, ..., t(N-1)=c(N-1), tN = cM

Either way the first and the last token times are exact, so TTFT, TPOT and E2E latency are
exact; only the spread of ITL gaps is approximate (bundled tokens show as zero gaps).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

_CHAT_CONTENT_KEYS = ("content", "reasoning_content", "reasoning", "tool_calls")


@dataclass(frozen=True, slots=True)
class Chunk:
    """The facts in one decoded stream payload.

    `carries_tokens`: whether it delivered output tokens (see the module notes).
    `completion_tokens` / `prompt_tokens`: from its `usage`, when present (cumulative).
    `error`: a server error reported inside the stream.
    """

    carries_tokens: bool
    completion_tokens: int | None = None
    prompt_tokens: int | None = None
    error: str | None = None


def parse_chunk(payload: Mapping[str, Any], *, chat: bool) -> Chunk:
    """Read one decoded JSON payload of a completions (or, with `chat`, chat) stream."""
    if payload.get("error"):
        err = payload["error"]
        message = err.get("message", err) if isinstance(err, Mapping) else err
        return Chunk(carries_tokens=False, error=f"server error in stream: {message}")
    usage = payload.get("usage") or {}
    choices = payload.get("choices") or []
    carries = bool(choices) and (not chat or _chat_choice_carries(choices[0]))
    return Chunk(
        carries_tokens=carries,
        completion_tokens=_int_or_none(usage.get("completion_tokens")),
        prompt_tokens=_int_or_none(usage.get("prompt_tokens")),
    )


def _chat_choice_carries(choice: Mapping[str, Any]) -> bool:
    if choice.get("finish_reason") is not None:
        return True
    delta = choice.get("delta") or {}
    if any(delta.get(key) for key in _CHAT_CONTENT_KEYS):
        return True
    return "role" not in delta and any(key in delta for key in _CHAT_CONTENT_KEYS)


def _int_or_none(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[call-overload]


def assign_token_times(
    chunk_times_s: Sequence[float] | np.ndarray,
    num_tokens: int,
    chunk_token_counts: Sequence[int] | None = None,
) -> np.ndarray:
    """Per-token arrival times from the times of token-bearing chunks (rule in the module notes).

    `chunk_token_counts`, when known, says how many tokens each chunk carried; otherwise each
    chunk counts as one. Returns `num_tokens` times (empty when there are no chunks).
    """
    times = np.asarray(chunk_times_s, dtype=np.float64)
    if num_tokens <= 0 or times.size == 0:
        return np.zeros(0, dtype=np.float64)
    if chunk_token_counts is not None:
        counts = np.asarray(chunk_token_counts, dtype=np.int64)
        if counts.shape != times.shape or (counts < 0).any():
            raise ValueError("chunk_token_counts must be non-negative, one per chunk time")
        per_token = np.repeat(times, counts)
        if per_token.size == 0:
            per_token = times[-1:]
    else:
        per_token = times
    if per_token.size < num_tokens:
        pad = np.full(num_tokens - per_token.size, per_token[-1])
        return np.concatenate([per_token, pad])
    if per_token.size > num_tokens:
        return np.concatenate([per_token[: num_tokens - 1], times[-1:]])
    return per_token.copy()
