"""What a streamed OpenAI-style response says: which chunks carry tokens, and when each token came.

Pure functions over decoded JSON payloads; the client feeds them, and the importers reuse
`assign_token_times` so that measured and imported records follow one rule. They are total:
a payload that is not what a completions stream holds gives a `Failure` (see `failure.py`),
never an exception.

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

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from llmsizer.bench.failure import MAX_DETAIL_CHARS, Failure, FailureKind, brief

_CHAT_CONTENT_KEYS = ("content", "reasoning_content", "reasoning", "tool_calls")
MAX_COUNT = 2**31 - 1  # a token count above this is no count at all
_JSON_TYPES = {list: "an array", str: "a string", int: "a number", float: "a number",
               bool: "a boolean", type(None): "null"}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Chunk:
    """The facts in one decoded stream payload.

    `carries_tokens`: whether it delivered output tokens (see the module notes).
    `completion_tokens` / `prompt_tokens`: from its `usage`, when present (cumulative).
    """

    carries_tokens: bool
    completion_tokens: int | None = None
    prompt_tokens: int | None = None


def decode_event(data: str, *, chat: bool) -> Chunk | Failure:
    """One event's data (other than `[DONE]`): JSON text, read by `parse_chunk`."""
    try:
        payload = json.loads(data)
    except (ValueError, RecursionError) as e:  # RecursionError: absurdly deep nesting
        return Failure(FailureKind.BAD_JSON, f"{e} in {brief(data)}")
    return parse_chunk(payload, chat=chat)


def parse_chunk(payload: object, *, chat: bool) -> Chunk | Failure:
    """Read one decoded JSON value of a completions (or, with `chat`, chat) stream.

    Total: any JSON value gives a `Chunk` or a `Failure` (an error event, the wrong shape, or
    token counts that are not whole numbers from 0 to `MAX_COUNT`).
    """
    if not isinstance(payload, Mapping):
        return _bad_chunk("the chunk", payload, "a JSON object")
    if payload.get("error"):
        err = payload["error"]
        message = err.get("message", err) if isinstance(err, Mapping) else err
        text = message if isinstance(message, str) else brief(message)
        return Failure(FailureKind.SERVER_ERROR, text[:MAX_DETAIL_CHARS] or brief(err))
    usage = payload.get("usage")
    usage = {} if usage is None else usage
    if not isinstance(usage, Mapping):
        return Failure(FailureKind.BAD_USAGE, f"usage is {brief(usage)}, not an object")
    completion, prompt = _count(usage, "completion_tokens"), _count(usage, "prompt_tokens")
    if isinstance(completion, Failure):
        return completion
    if isinstance(prompt, Failure):
        return prompt
    choices = payload.get("choices")
    choices = [] if choices is None else choices
    if not isinstance(choices, list):
        return _bad_chunk("choices", choices, "an array")
    if choices and not isinstance(choices[0], Mapping):
        return _bad_chunk("choices[0]", choices[0], "a JSON object")
    carries = bool(choices)
    if carries and chat:
        delta = choices[0].get("delta")
        delta = {} if delta is None else delta
        if not isinstance(delta, Mapping):
            return _bad_chunk("choices[0].delta", delta, "a JSON object")
        carries = _chat_choice_carries(choices[0], delta)
    return Chunk(carries_tokens=carries, completion_tokens=completion, prompt_tokens=prompt)


def _chat_choice_carries(choice: Mapping[str, Any], delta: Mapping[str, Any]) -> bool:
    if choice.get("finish_reason") is not None:
        return True
    if any(delta.get(key) for key in _CHAT_CONTENT_KEYS):
        return True
    return "role" not in delta and any(key in delta for key in _CHAT_CONTENT_KEYS)


def _count(usage: Mapping[str, Any], key: str) -> int | Failure | None:
    """`usage[key]` as a count: absent or null is None; a whole number 0..MAX_COUNT an int."""
    value = usage.get(key)
    if value is None:
        return None
    whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not whole or not 0 <= value <= MAX_COUNT:
        detail = f"usage.{key} is {brief(value)}, not a whole number from 0 to {MAX_COUNT}"
        return Failure(FailureKind.BAD_USAGE, detail)
    return int(value)


def _bad_chunk(what: str, value: object, expected: str) -> Failure:
    got = _JSON_TYPES.get(type(value), type(value).__name__)
    return Failure(FailureKind.BAD_CHUNK, f"{what} is {got}, not {expected}: {brief(value)}")


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
