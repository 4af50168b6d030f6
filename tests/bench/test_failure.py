"""Network exceptions become a failure kind and a detail a person can act on."""

from __future__ import annotations

import errno
import socket

import httpx
import pytest

from llmsizer.bench.failure import Failure, brief, describe_exception


def wrapped(error: type[httpx.HTTPError], cause: BaseException, text: str = "") -> Exception:
    """As httpx raises it: its own (often empty) message, the socket's error as the cause."""
    try:
        raise error(text) from cause
    except httpx.HTTPError as e:
        return e


@pytest.mark.parametrize(
    ("exc", "responded", "expected"),
    [
        (
            wrapped(httpx.ConnectError, ConnectionRefusedError(errno.ECONNREFUSED, "x"), "All"),
            False,
            "connection failed: cannot connect to http://h:1: connection refused, "
            "is the server running?",
        ),
        (
            wrapped(httpx.ConnectError, socket.gaierror(-2, "Name or service not known")),
            False,
            "connection failed: cannot connect to http://h:1: name or service not known",
        ),
        (
            wrapped(httpx.ReadError, ConnectionResetError(errno.ECONNRESET, "x")),
            True,
            "stream dropped: ConnectionResetError: connection reset by peer",
        ),
        (
            wrapped(httpx.RemoteProtocolError, ValueError("h11"), "Server disconnected"),
            False,
            "no response: RemoteProtocolError: Server disconnected",
        ),
        (wrapped(httpx.ReadError, ValueError("v")), True, "stream dropped: ReadError"),
        (wrapped(httpx.DecodingError, ValueError("v"), "bad gzip"), True, "stream dropped: "),
        (RuntimeError("boom"), True, "internal: RuntimeError: boom"),
    ],
)
def test_exceptions_become_failures(exc: Exception, responded: bool, expected: str) -> None:
    failure = describe_exception(exc, url="http://h:1", responded=responded)
    assert str(failure).startswith(expected)


def test_a_failure_always_has_a_detail() -> None:
    assert str(Failure("stream dropped", "")) == "stream dropped: no detail"


def test_brief_cuts_deep_and_long_values() -> None:
    deep: list[object] = []
    for _ in range(10_000):
        deep = [deep]
    assert len(brief(deep)) < 50
    assert len(brief("x" * 10**6)) <= 310
