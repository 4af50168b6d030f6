"""A fake vLLM behind `httpx.MockTransport`, and a fake clock that its stream advances.

`FakeVllm` streams completions the way vLLM 0.32 does (one chunk per token, some with empty
text, a usage chunk, `[DONE]`); before yielding chunk i it sets the shared `FakeClock` to
`arrival + ttft_s + i * itl_s`, so a client reading that clock sees exact, known times.
Knobs make it fail: an HTTP status, a stream cut after some chunks, a stall.
"""

from __future__ import annotations

import asyncio
import errno
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass(slots=True)
class FakeClock:
    t: float = 0.0

    def now(self) -> float:
        return self.t

    async def sleep_until(self, t_s: float) -> None:
        await asyncio.sleep(0)  # like a real sleep, tasks already due run before time moves
        self.t = max(self.t, t_s)


class _Stream(httpx.AsyncByteStream):
    def __init__(self, pieces: Callable[[], AsyncIterator[bytes]]) -> None:
        self._pieces = pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for piece in self._pieces():
            yield piece


class PieceStream(httpx.AsyncByteStream):
    """A response body delivered in the given pieces, one network read each."""

    def __init__(self, pieces: list[bytes]) -> None:
        self._pieces = pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self._pieces:
            yield piece


def sse(payload: dict[str, Any] | str) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return f"data: {data}\n\n".encode()


@dataclass
class FakeVllm:
    """Answers /v1/models, /tokenize (one token per word), /metrics and streamed completions.

    Every completion gets `ttft_s` to its first token and `itl_s` between tokens on `clock`,
    relative to the clock when the request arrived. `bundle` puts that many tokens in each
    chunk; `empty_every` gives every n-th token empty text.
    """

    clock: FakeClock = field(default_factory=FakeClock)
    ttft_s: float = 0.1
    itl_s: float = 0.01
    status: int = 200
    cut_after: int | None = None  # chunks sent before the connection drops
    stall_s: float | None = None  # real seconds to hang after the first chunk
    bundle: int = 1
    empty_every: int = 3
    chat: bool = False
    in_flight: int = 0
    max_in_flight: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    num_finished: int = 0
    fail_from_request: int | None = None  # from this request on, refuse connections
    tokenize: bool = True  # whether /tokenize exists (vLLM's does; other servers 404)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    async def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/v1/models":
            return httpx.Response(200, json={"data": [{"id": "tiny"}]})
        if path == "/tokenize" and not self.tokenize:
            return httpx.Response(404, text="Not Found")
        if path == "/tokenize":
            body = json.loads(request.content)
            text = body.get("prompt") or body["messages"][0]["content"]
            return httpx.Response(200, json={"count": len(text.split())})
        if path == "/metrics":
            done = float(self.num_finished)
            text = (
                f"vllm:e2e_request_latency_seconds_sum {done * 0.5}\n"
                f"vllm:e2e_request_latency_seconds_count {done}\n"
            )
            return httpx.Response(200, text=text)
        body = json.loads(request.content)
        self.requests.append(body)
        if self.fail_from_request is not None and len(self.requests) > self.fail_from_request:
            # as httpx raises it: a generic message, the socket's error as the cause
            refused = ConnectionRefusedError(errno.ECONNREFUSED, "Connect call failed")
            raise httpx.ConnectError("All connection attempts failed") from refused
        if self.status != 200:
            return httpx.Response(self.status, text="internal error")
        if not body.get("stream"):
            prompt = body.get("prompt") or body["messages"][0]["content"]
            usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": 1}
            return httpx.Response(200, json={"choices": [{"text": "x"}], "usage": usage})
        return httpx.Response(200, stream=_Stream(lambda: self._pieces(body)))

    async def _pieces(self, body: dict[str, Any]) -> AsyncIterator[bytes]:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            async for piece in self._chunks(body):
                yield piece
        finally:
            self.in_flight -= 1

    async def _chunks(self, body: dict[str, Any]) -> AsyncIterator[bytes]:
        start = self.clock.now()
        n = int(body.get("max_tokens") or body["max_completion_tokens"])
        num_prompt = len((body.get("prompt") or body["messages"][0]["content"]).split())
        if self.chat:
            yield sse(self._chat_payload({"role": "assistant", "content": ""}, None))
        sent = 0
        for k, first in enumerate(range(0, n, self.bundle)):
            await asyncio.sleep(0)  # let other requests interleave
            if self.cut_after is not None and k == self.cut_after:
                raise httpx.RemoteProtocolError("peer closed connection")
            if self.stall_s is not None and k == 1:
                await asyncio.sleep(self.stall_s)
            last = min(first + self.bundle, n) - 1
            self.clock.t = max(self.clock.t, start + self.ttft_s + last * self.itl_s)
            text = "" if (first + 1) % self.empty_every == 0 else " word"
            finish = "length" if last == n - 1 else None
            yield sse(self._payload(text, finish))
            sent = last + 1
        usage = {"prompt_tokens": num_prompt, "completion_tokens": sent}
        yield sse({"id": "x", "choices": [], "usage": usage})
        self.num_finished += 1
        yield sse("[DONE]")

    def _payload(self, text: str, finish: str | None) -> dict[str, Any]:
        if self.chat:
            return self._chat_payload({"content": text}, finish)
        return {"id": "x", "choices": [{"index": 0, "text": text, "finish_reason": finish}]}

    def _chat_payload(self, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {"id": "x", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
