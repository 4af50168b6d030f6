"""Send one streaming request to an OpenAI-compatible server and return its `RequestRecord`.

The HTTP layer is an `httpx.AsyncClient`, so tests pass an `httpx.MockTransport` and a fake
clock. Every outcome is a record: an HTTP error status, a timeout, a dropped connection, a
stream that ends before `[DONE]`, bad JSON or an error event inside the stream all give a
record with `error` set ("<kind>: <detail>", the kind names the failure for summaries) and
whatever tokens arrived before the failure. Only cancellation propagates.

Times: `arrival_s` is read just before the request is handed to httpx; each network read is
stamped when it returns, and every event it completes shares that stamp. Token counts come
from the server's `usage`; token times follow `stream.assign_token_times`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import httpx
import numpy as np

from llmsizer.bench.sse import SseParser
from llmsizer.bench.stream import Chunk, assign_token_times, parse_chunk
from llmsizer.records import RequestRecord

_MAX_ERROR_BODY = 300  # characters of an error response kept in the record


class Endpoint(StrEnum):
    COMPLETIONS = "completions"
    CHAT = "chat"

    @property
    def path(self) -> str:
        return "/v1/completions" if self is Endpoint.COMPLETIONS else "/v1/chat/completions"


@dataclass(frozen=True, slots=True)
class ClientOptions:
    """How requests are formed. Times in seconds.

    `timeout_s`: the longest wait for any byte (connect, first token, next chunk).
    `request_timeout_s`: the longest a whole request may take.
    `continuous_usage_stats`: ask vLLM for cumulative usage in every chunk, which gives exact
    per-chunk token counts (a vLLM extension; other servers may reject it).
    """

    model: str
    endpoint: Endpoint = Endpoint.COMPLETIONS
    ignore_eos: bool = True
    continuous_usage_stats: bool = False
    request_timeout_s: float = 3600.0


@dataclass(frozen=True, slots=True)
class RequestPlan:
    """One request to send: its id, prompt text, intended prompt length and output length."""

    request_id: int
    prompt: str
    num_prompt_tokens: int
    max_tokens: int


def build_payload(plan: RequestPlan, options: ClientOptions) -> dict[str, Any]:
    """The JSON body: streaming with usage, greedy, exactly `max_tokens` when `ignore_eos`."""
    stream_options: dict[str, bool] = {"include_usage": True}
    if options.continuous_usage_stats:
        stream_options["continuous_usage_stats"] = True
    body: dict[str, Any] = {
        "model": options.model,
        "stream": True,
        "stream_options": stream_options,
        "temperature": 0.0,
    }
    if options.endpoint is Endpoint.CHAT:
        body["messages"] = [{"role": "user", "content": plan.prompt}]
        body["max_completion_tokens"] = plan.max_tokens
    else:
        body["prompt"] = plan.prompt
        body["max_tokens"] = plan.max_tokens
    if options.ignore_eos:
        body["ignore_eos"] = True
    return body


@dataclass(slots=True)
class _Tally:
    """What has arrived so far for one request."""

    chunk_times_s: list[float] = field(default_factory=list)
    chunk_counts: list[int] = field(default_factory=list)
    completion_tokens: int | None = None
    prompt_tokens: int | None = None
    counts_known: bool = True  # every token-bearing chunk came with cumulative usage
    done: bool = False

    def add(self, chunk: Chunk, t_s: float) -> None:
        if chunk.carries_tokens:
            self.chunk_times_s.append(t_s)
            if chunk.completion_tokens is None:
                self.counts_known = False
                self.chunk_counts.append(1)
            else:
                self.chunk_counts.append(chunk.completion_tokens - (self.completion_tokens or 0))
        if chunk.completion_tokens is not None:
            self.completion_tokens = chunk.completion_tokens
        if chunk.prompt_tokens is not None:
            self.prompt_tokens = chunk.prompt_tokens

    def token_times(self, num_tokens: int) -> np.ndarray:
        counts = self.chunk_counts if self.counts_known else None
        return assign_token_times(self.chunk_times_s, num_tokens, counts)


class StreamError(Exception):
    """A failure found in the stream's content; its message is the record's error."""


async def send_request(
    http: httpx.AsyncClient,
    plan: RequestPlan,
    options: ClientOptions,
    now: Callable[[], float],
) -> RequestRecord:
    """Send `plan` and return its record; failures become records with `error` set."""
    tally = _Tally()
    arrival_s = now()
    try:
        async with asyncio.timeout(options.request_timeout_s):
            await _stream(http, plan, options, now, tally)
    except StreamError as e:
        return _record(plan, arrival_s, tally, now(), str(e))
    except TimeoutError:
        detail = f"request exceeded {options.request_timeout_s:g} s"
        return _record(plan, arrival_s, tally, now(), f"timeout: {detail}")
    except httpx.TimeoutException as e:
        return _record(plan, arrival_s, tally, now(), f"timeout: {_timeout_detail(e)}")
    except (httpx.ConnectError, ConnectionError) as e:
        return _record(plan, arrival_s, tally, now(), f"connection failed: {e}")
    except (httpx.RemoteProtocolError, httpx.ReadError) as e:
        return _record(plan, arrival_s, tally, now(), f"stream dropped: {e}")
    except httpx.HTTPError as e:
        return _record(plan, arrival_s, tally, now(), f"http error: {type(e).__name__} {e}")
    except json.JSONDecodeError as e:
        return _record(plan, arrival_s, tally, now(), f"bad JSON in stream: {e}")
    return _finished(plan, arrival_s, tally, now())


async def _stream(
    http: httpx.AsyncClient,
    plan: RequestPlan,
    options: ClientOptions,
    now: Callable[[], float],
    tally: _Tally,
) -> None:
    chat = options.endpoint is Endpoint.CHAT
    body = build_payload(plan, options)
    async with http.stream("POST", options.endpoint.path, json=body) as response:
        if response.status_code != 200:
            text = (await response.aread()).decode("utf-8", errors="replace")
            raise StreamError(f"HTTP {response.status_code}: {text[:_MAX_ERROR_BODY]}")
        parser = SseParser()
        async for piece in response.aiter_bytes():
            t_s = now()
            for event in parser.feed(piece):
                if event.is_done:
                    tally.done = True
                    continue
                chunk = parse_chunk(json.loads(event.data), chat=chat)
                if chunk.error is not None:
                    raise StreamError(chunk.error)
                tally.add(chunk, t_s)


def _finished(plan: RequestPlan, arrival_s: float, tally: _Tally, t_s: float) -> RequestRecord:
    if not tally.done:
        return _record(plan, arrival_s, tally, t_s, "stream dropped: ended before [DONE]")
    if tally.completion_tokens is None:
        detail = "the server sent no usage (stream_options.include_usage unsupported?)"
        return _record(plan, arrival_s, tally, t_s, f"no usage in stream: {detail}")
    if not tally.chunk_times_s or tally.completion_tokens == 0:
        return _record(plan, arrival_s, tally, t_s, "no tokens: the stream carried no output")
    times = tally.token_times(tally.completion_tokens)
    return _make_record(plan, arrival_s, tally, times, float(times[-1]), None)


def _record(
    plan: RequestPlan, arrival_s: float, tally: _Tally, t_s: float, error: str
) -> RequestRecord:
    """A failed request: the tokens that arrived before the failure, and when it was seen."""
    num_tokens = sum(tally.chunk_counts)
    return _make_record(plan, arrival_s, tally, tally.token_times(num_tokens), t_s, error)


def _make_record(
    plan: RequestPlan,
    arrival_s: float,
    tally: _Tally,
    token_times_s: np.ndarray,
    finish_s: float,
    error: str | None,
) -> RequestRecord:
    prompt_tokens = plan.num_prompt_tokens if tally.prompt_tokens is None else tally.prompt_tokens
    return RequestRecord(
        request_id=plan.request_id,
        arrival_s=arrival_s,
        num_prompt_tokens=prompt_tokens,
        num_output_tokens_requested=plan.max_tokens,
        token_times_s=token_times_s,
        finish_s=finish_s,
        error=error,
    )


def _timeout_detail(e: httpx.TimeoutException) -> str:
    """`ReadTimeout: no byte from the server for 60 s` (httpx's own message is often empty)."""
    phase = {"ConnectTimeout": "connect", "ReadTimeout": "read", "WriteTimeout": "write"}
    kind = phase.get(type(e).__name__)
    try:
        limit = e.request.extensions.get("timeout", {}).get(kind) if kind else None
    except RuntimeError:  # no request attached
        limit = None
    what = {
        "connect": "could not connect",
        "read": "no byte from the server",
        "write": "could not send",
    }.get(kind or "", "timed out")
    detail = f"{what} for {limit:g} s" if limit is not None else (str(e) or what)
    return f"{type(e).__name__}: {detail}"
