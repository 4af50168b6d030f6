"""Send one streaming request to an OpenAI-compatible server and return its `RequestRecord`.

The HTTP layer is an `httpx.AsyncClient`, so tests pass an `httpx.MockTransport` and a fake
clock. Every outcome is a record: whatever the server sends or does, the request ends as a
record with `error` set ("<kind>: <detail>", kinds in `failure.py`) and whatever tokens
arrived before the failure, or as a successful record. The bytes are read by the pure
`reader.ResponseReader`; this module only moves them and maps network exceptions to failures.
Any other exception is caught here too, as the last resort, and becomes an `internal` failure:
one request's surprise never ends the run. Only cancellation propagates.

Times: `arrival_s` is read just before the request is handed to httpx; each network read is
stamped when it returns, and every event it completes shares that stamp. Token counts come
from the server's `usage`; token times follow `stream.assign_token_times`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import httpx

from llmsizer.bench.failure import MAX_DETAIL_CHARS, Failure, FailureKind, describe_exception
from llmsizer.bench.reader import ResponseReader, status_failure
from llmsizer.records import RequestRecord


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


async def send_request(
    http: httpx.AsyncClient,
    plan: RequestPlan,
    options: ClientOptions,
    now: Callable[[], float],
) -> RequestRecord:
    """Send `plan` and return its record; every failure is a record with `error` set."""
    reader = ResponseReader(chat=options.endpoint is Endpoint.CHAT, max_tokens=plan.max_tokens)
    arrival_s = now()
    try:
        async with asyncio.timeout(options.request_timeout_s):
            await _exchange(http, plan, options, now, reader)
    except TimeoutError:
        reader.fail(
            Failure(FailureKind.TIMEOUT, f"request exceeded {options.request_timeout_s:g} s")
        )
    except Exception as e:  # the request boundary: nothing a server does may end the run
        url = str(http.base_url).rstrip("/")
        reader.fail(describe_exception(e, url=url, responded=reader.responded))
    failure = reader.finish()
    times = reader.token_times(complete=failure is None)
    finish_s = float(times[-1]) if failure is None else now()
    prompt_tokens = reader.tally.prompt_tokens
    return RequestRecord(
        request_id=plan.request_id,
        arrival_s=arrival_s,
        num_prompt_tokens=plan.num_prompt_tokens if prompt_tokens is None else prompt_tokens,
        num_output_tokens_requested=plan.max_tokens,
        token_times_s=times,
        finish_s=finish_s,
        error=None if failure is None else str(failure),
    )


async def _exchange(
    http: httpx.AsyncClient,
    plan: RequestPlan,
    options: ClientOptions,
    now: Callable[[], float],
    reader: ResponseReader,
) -> None:
    """Send the request and feed the response to `reader` until it ends or fails."""
    body = build_payload(plan, options)
    async with http.stream("POST", options.endpoint.path, json=body) as response:
        reader.start(response.headers.get("content-type", ""))
        # Bodies are read only when not compressed (the client asks for none): a small
        # compressed body can unpack to gigabytes.
        encoding = response.headers.get("content-encoding", "identity")
        if response.status_code != 200:
            start = await _body_start(response) if encoding == "identity" else b""
            reader.fail(status_failure(response.status_code, response.headers, start))
            return
        if encoding != "identity":
            detail = f"compressed ({encoding}) although the client asked for no compression"
            reader.fail(Failure(FailureKind.NOT_EVENT_STREAM, detail))
            return
        # Read on after [DONE] (the reader ignores it) so that the connection is reused.
        async for piece in response.aiter_bytes():
            if reader.feed(piece, now()) is not None:
                return


async def _body_start(response: httpx.Response) -> bytes:
    """The first bytes of an error body: enough to quote, without reading an endless one."""
    start = b""
    async for piece in response.aiter_bytes():
        start += piece
        if len(start) >= MAX_DETAIL_CHARS:
            break
    return start
