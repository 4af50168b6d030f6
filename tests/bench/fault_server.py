"""A misbehaving OpenAI-compatible server on 127.0.0.1, for testing the bench client.

    with FaultServer([Fault.RESET, Fault.OK]) as server:    # faults cycled per request
        run_benchmark(BenchSpec(base_url=server.url, ...))
        server.num_streamed                                  # streamed requests it got

Raw asyncio sockets (no web framework), so it can break HTTP itself: close during the
headers, reset the connection (SO_LINGER 0), never answer. It runs its own event loop in a
thread, on a free port, and is bounded: it lives at most `lifetime_s`, answers at most
`max_requests` streamed requests (later connections are closed at once), and holds a stalled
or silent connection at most `stall_s`.

`/v1/models`, `/tokenize` (one token per word) and non-streamed completions (usage only)
are answered correctly, so `llmsizer bench` can make its prompts; each streamed completion
gets the next fault of the cycle. `EXPECTED_KIND` says which failure kind the client should
record for each fault (None: a good record).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Fault(StrEnum):
    OK = "ok"  # a well-formed stream
    HTTP_500 = "http-500"
    HTTP_429 = "http-429"  # with Retry-After
    REDIRECT = "redirect"  # 302 to another path
    HTML = "html"  # a 200 with an HTML page
    STALL = "stall"  # one token, then no byte for `stall_s`
    SILENT = "silent"  # reads the request, never answers
    CLOSE_IN_HEADERS = "close-in-headers"  # half a status line and headers, then closes
    DROP = "drop"  # two tokens, then closes mid-stream (FIN)
    RESET = "reset"  # two tokens, then a TCP reset (SO_LINGER 0)
    BAD_JSON = "bad-json"  # a chunk that is not JSON
    NOT_OBJECT = "not-object"  # data: [1, 2, 3]
    BAD_USAGE = "bad-usage"  # completion_tokens: "many"
    ERROR_EVENT = "error-event"  # data: {"error": {...}}
    NON_UTF8 = "non-utf8"  # an event stream whose bytes are not UTF-8
    DRIP = "drip"  # a good stream, one byte per write
    HUGE = "huge"  # a good stream whose first token chunk is `huge_bytes` long


EXPECTED_KIND: dict[Fault, str | None] = {
    Fault.OK: None,
    Fault.HTTP_500: "HTTP 500",
    Fault.HTTP_429: "HTTP 429",
    Fault.REDIRECT: "HTTP 302",
    Fault.HTML: "not an event stream",
    Fault.STALL: "timeout",
    Fault.SILENT: "timeout",
    Fault.CLOSE_IN_HEADERS: "no response",
    Fault.DROP: "stream dropped",
    Fault.RESET: "stream dropped",
    Fault.BAD_JSON: "bad JSON in stream",
    Fault.NOT_OBJECT: "bad chunk in stream",
    Fault.BAD_USAGE: "bad usage in stream",
    Fault.ERROR_EVENT: "server error in stream",
    Fault.NON_UTF8: "bad JSON in stream",
    Fault.DRIP: None,
    Fault.HUGE: None,
}

_REASONS = {200: "OK", 302: "Found", 404: "Not Found", 429: "Too Many Requests", 500: "Error"}


@dataclass
class FaultServer:
    """See the module notes. Times in seconds; `huge_bytes` is the size of a HUGE chunk."""

    faults: Sequence[Fault] = (Fault.OK,)
    stall_s: float = 2.0
    drip_s: float = 0.0005
    huge_bytes: int = 4 * 2**20
    max_requests: int = 2000
    lifetime_s: float = 300.0
    num_streamed: int = 0
    by_fault: Counter[Fault] = field(default_factory=Counter)
    port: int = 0
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _stop: asyncio.Event | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FaultServer:
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self._thread.start()
        if not ready.wait(10.0):
            raise RuntimeError("the fault server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10.0)

    def _run(self, ready: threading.Event) -> None:
        asyncio.run(self._main(ready))

    async def _main(self, ready: threading.Event) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        server = await asyncio.start_server(self._accept, "127.0.0.1", 0, limit=2**20)
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), self.lifetime_s)
        server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)  # type: ignore[arg-type]
        try:
            while await self._one_request(reader, writer):
                pass
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass  # the client went away or sent nonsense: this connection is over
        except asyncio.CancelledError:
            pass  # the server is shutting down (asyncio would log a cancelled handler)
        finally:
            self._tasks.discard(task)  # type: ignore[arg-type]
            if not writer.transport.is_closing():
                writer.close()

    async def _one_request(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Answer one request; False when the connection is to be closed."""
        head = await reader.readuntil(b"\r\n\r\n")
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        method, path, _ = request_line.split(" ", 2)
        headers = {
            k.strip().lower(): v.strip()
            for k, _, v in (line.partition(":") for line in header_lines if line)
        }
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        payload: dict[str, Any] = json.loads(body) if body else {}
        if path == "/v1/models":
            return await _reply(writer, 200, json.dumps({"data": [{"id": "fault"}]}).encode())
        if path == "/tokenize":
            count = len(_prompt(payload).split())
            return await _reply(writer, 200, json.dumps({"count": count}).encode())
        if method != "POST" or not path.startswith("/v1/"):
            return await _reply(writer, 404, b"not found")
        if not payload.get("stream"):
            usage = {"prompt_tokens": len(_prompt(payload).split()), "completion_tokens": 1}
            return await _reply(
                writer, 200, json.dumps({"choices": [{"text": "x"}], "usage": usage}).encode()
            )
        if self.num_streamed >= self.max_requests:
            return False
        fault = self.faults[self.num_streamed % len(self.faults)]
        self.num_streamed += 1
        self.by_fault[fault] += 1
        return await self._stream(fault, payload, writer)

    async def _stream(
        self, fault: Fault, payload: dict[str, Any], writer: asyncio.StreamWriter
    ) -> bool:
        n = int(payload.get("max_tokens") or payload.get("max_completion_tokens") or 1)
        chat = "messages" in payload
        usage = {"prompt_tokens": len(_prompt(payload).split()), "completion_tokens": n}
        tokens = [_event(_token(chat, " word")) for _ in range(n)]
        good = [*tokens, _event({"choices": [], "usage": usage}), b"data: [DONE]\n\n"]
        if fault is Fault.OK:
            return await _stream_events(writer, good)
        if fault is Fault.HTTP_500:
            error = {"error": {"message": "internal error", "type": "InternalServerError"}}
            return await _reply(writer, 500, json.dumps(error).encode())
        if fault is Fault.HTTP_429:
            return await _reply(writer, 429, b"too many requests", {"Retry-After": "1"})
        if fault is Fault.REDIRECT:
            return await _reply(writer, 302, b"", {"Location": "/elsewhere"})
        if fault is Fault.HTML:
            page = b"<!DOCTYPE html><html><body><h1>Welcome to nginx!</h1></body></html>"
            return await _reply(writer, 200, page, {"Content-Type": "text/html"})
        if fault is Fault.STALL:
            await _start_stream(writer)
            await _send_chunk(writer, tokens[0])
            await asyncio.sleep(self.stall_s)
            return False
        if fault is Fault.SILENT:
            await asyncio.sleep(self.stall_s)
            return False
        if fault is Fault.CLOSE_IN_HEADERS:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/ev")
            await writer.drain()
            return False
        if fault in (Fault.DROP, Fault.RESET):
            await _start_stream(writer)
            for event in tokens[:2]:
                await _send_chunk(writer, event)
            await asyncio.sleep(0.05)  # let the client read the tokens before the end
            if fault is Fault.RESET:
                sock = writer.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
            return False
        if fault is Fault.DRIP:
            await _start_stream(writer)
            for byte in b"".join(good):
                await _send_chunk(writer, bytes([byte]))
                await asyncio.sleep(self.drip_s)
            return await _end_stream(writer)
        if fault is Fault.HUGE:
            big = _event(_token(chat, "x" * self.huge_bytes))
            return await _stream_events(writer, [big, *good[1:]])
        bad = {
            Fault.BAD_JSON: b"data: {not json\n\n",
            Fault.NOT_OBJECT: b"data: [1, 2, 3]\n\n",
            Fault.BAD_USAGE: _event(
                {"choices": [], "usage": {**usage, "completion_tokens": "many"}}
            ),
            Fault.ERROR_EVENT: _event({"error": {"message": "out of memory", "code": 500}}),
            Fault.NON_UTF8: b"data: \xff\xfe not utf-8 \xc3\x28\n\n",
        }[fault]
        return await _stream_events(writer, [*tokens[:1], bad, *good[1:]])


def _prompt(payload: dict[str, Any]) -> str:
    if "messages" in payload:
        return str(payload["messages"][0]["content"])
    return str(payload.get("prompt", ""))


def _token(chat: bool, text: str) -> dict[str, Any]:
    if chat:
        return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return {"choices": [{"index": 0, "text": text, "finish_reason": None}]}


def _event(payload: object) -> bytes:
    return f"data: {json.dumps(payload)}\n\n".encode()


async def _reply(
    writer: asyncio.StreamWriter, status: int, body: bytes, headers: dict[str, str] | None = None
) -> bool:
    fields = {
        "Content-Type": "application/json",
        **(headers or {}),
        "Content-Length": str(len(body)),
    }
    head = f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in fields.items()) + "\r\n"
    writer.write(head.encode() + body)
    await writer.drain()
    return True


async def _start_stream(writer: asyncio.StreamWriter) -> None:
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    await writer.drain()


async def _send_chunk(writer: asyncio.StreamWriter, data: bytes) -> None:
    writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
    await writer.drain()


async def _end_stream(writer: asyncio.StreamWriter) -> bool:
    writer.write(b"0\r\n\r\n")
    await writer.drain()
    return True


async def _stream_events(writer: asyncio.StreamWriter, events: list[bytes]) -> bool:
    await _start_stream(writer)
    for event in events:
        await _send_chunk(writer, event)
        await asyncio.sleep(0)  # one network write per event, interleaved with others
    return await _end_stream(writer)
