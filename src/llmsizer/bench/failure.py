"""Why a request failed: a kind for the summaries and a detail a person can act on.

A failed request is a record whose `error` reads `"<kind>: <detail>"`; summaries count
records by the kind (the text before the first colon), so a kind never holds a colon and a
detail is never empty. The kinds, by where the request got to:

    connection failed       no connection (refused, unreachable, no such host)
    no response             connected, but the server closed it before its response headers
    timeout                 a byte did not come in time (`timeout_s`), or the request took
                            longer than `request_timeout_s`
    HTTP <status>           an answer other than 200 (the detail quotes its body)
    not an event stream     a 200 whose body holds no server-sent event (an HTML page, a
                            non-streamed JSON answer)
    stream dropped          the connection closed or was reset before `[DONE]`
    oversized event         one event longer than the parser keeps (`sse.MAX_EVENT_CHARS`)
    bad JSON in stream      an event whose data is not JSON
    bad chunk in stream     JSON, but not the shape of a completions chunk
    bad usage in stream     token counts that are not whole numbers, go down, or are absurd
    server error in stream  the server reported an error inside the stream
    no usage in stream      the stream ended without token counts
    no tokens               the stream ended without output
    interrupted             the run was stopped (Ctrl-C, SIGTERM) while it was in flight
    internal                a bug in this client: the exception's type and text

`describe_exception` maps what httpx and the OS raise to these kinds; the other kinds come
from reading the stream (`reader.py`).
"""

from __future__ import annotations

import errno as errno_codes
import os
import reprlib
from dataclasses import dataclass
from enum import StrEnum

import httpx

MAX_DETAIL_CHARS = 300  # of server text quoted in a detail


class FailureKind(StrEnum):
    CONNECTION = "connection failed"
    NO_RESPONSE = "no response"
    TIMEOUT = "timeout"
    NOT_EVENT_STREAM = "not an event stream"
    DROPPED = "stream dropped"
    OVERSIZED = "oversized event"
    BAD_JSON = "bad JSON in stream"
    BAD_CHUNK = "bad chunk in stream"
    BAD_USAGE = "bad usage in stream"
    SERVER_ERROR = "server error in stream"
    NO_USAGE = "no usage in stream"
    NO_TOKENS = "no tokens"
    INTERRUPTED = "interrupted"
    INTERNAL = "internal"


@dataclass(frozen=True, slots=True)
class Failure:
    """One request's failure. `kind` is a `FailureKind` or `"HTTP <status>"`."""

    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail or 'no detail'}"

    @staticmethod
    def http_status(status: int, detail: str) -> Failure:
        return Failure(f"HTTP {status}", detail)


def brief(value: object) -> str:
    """A short, printable quote of anything a server sent (deep or huge values are cut)."""
    shorten = reprlib.Repr()
    shorten.maxstring = shorten.maxother = MAX_DETAIL_CHARS
    shorten.maxlevel, shorten.maxlist, shorten.maxdict = 3, 8, 8
    return shorten.repr(value)


def os_reason(e: BaseException) -> str | None:
    """`ConnectionResetError: connection reset by peer`: the OS error under an httpx error.

    httpx wraps httpcore, which wraps the socket's `OSError`; the errno there is what a
    person can act on, while the wrappers' own text is often empty or generic.
    """
    seen: set[int] = set()
    cause: BaseException | None = e
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        code = getattr(cause, "errno", None)
        if isinstance(cause, OSError) and isinstance(code, int):
            # negative codes are the resolver's (socket.gaierror), with text of their own
            text = os.strerror(code) if code > 0 else (cause.strerror or f"error {code}")
            return f"{type(cause).__name__}: {text.lower()}"
        cause = cause.__cause__ or cause.__context__
    return None


def _text(e: BaseException) -> str:
    """The exception's own text, or its class name when it has none."""
    return os_reason(e) or (f"{type(e).__name__}: {e}" if str(e) else type(e).__name__)


def describe_exception(e: BaseException, *, url: str, responded: bool) -> Failure:
    """The failure for an exception raised while sending to or reading from `url`.

    `responded`: whether the response's headers had arrived (a closed connection before
    them is `no response`, after them `stream dropped`).
    """
    if isinstance(e, httpx.TimeoutException):
        return Failure(FailureKind.TIMEOUT, timeout_detail(e))
    if isinstance(e, httpx.ConnectError | ConnectionRefusedError):
        return Failure(FailureKind.CONNECTION, connect_detail(e, url))
    if isinstance(e, httpx.TransportError | OSError):
        kind = FailureKind.DROPPED if responded else FailureKind.NO_RESPONSE
        return Failure(kind, _text(e))
    if isinstance(e, httpx.HTTPError):  # e.g. a body that fails to decompress
        kind = FailureKind.DROPPED if responded else FailureKind.NO_RESPONSE
        return Failure(kind, f"{type(e).__name__}: {e}")
    return Failure(FailureKind.INTERNAL, f"{type(e).__name__}: {e}")


def connect_detail(e: BaseException, url: str) -> str:
    """`cannot connect to http://127.0.0.1:1: connection refused, is the server running?`"""
    reason = os_reason(e)
    refused = isinstance(e, ConnectionRefusedError) or (
        reason is not None and os.strerror(errno_codes.ECONNREFUSED).lower() in reason
    )
    if refused:
        return f"cannot connect to {url}: connection refused, is the server running?"
    why = reason.split(": ", 1)[1] if reason else (str(e) or type(e).__name__)
    return f"cannot connect to {url}: {why}"


def timeout_detail(e: httpx.TimeoutException) -> str:
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
