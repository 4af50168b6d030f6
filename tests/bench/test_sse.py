"""The SSE parser gives the same events however the bytes are split."""

from __future__ import annotations

import pytest

from llmsizer.bench.sse import SseEvent, SseParser

STREAM = (
    ": ping\r\n"
    "\r\n"
    'data: {"a": 1}\r\n'
    "\r\n"
    "event: usage\n"
    "data: line one\n"
    "data:line two\n"
    "id: 7\n"
    "\n"
    "data: caf\u00e9 \u2713\r"
    "\r"
    ": a comment between events\n"
    "event: empty\n"
    "\n"
    "data: [DONE]\n"
    "\n"
).encode()

EXPECTED = [
    SseEvent('{"a": 1}'),
    SseEvent("line one\nline two", "usage"),
    SseEvent("caf\u00e9 \u2713"),
    SseEvent("[DONE]"),
]


def feed_all(pieces: list[bytes]) -> list[SseEvent]:
    parser = SseParser()
    return [event for piece in pieces for event in parser.feed(piece)]


def test_whole_stream() -> None:
    assert feed_all([STREAM]) == EXPECTED


def test_byte_by_byte() -> None:
    """Splits inside "\\r\\n", inside "data:", and inside multi-byte UTF-8 characters."""
    assert feed_all([STREAM[i : i + 1] for i in range(len(STREAM))]) == EXPECTED


@pytest.mark.parametrize("cut", range(1, len(STREAM)))
def test_every_two_way_split(cut: int) -> None:
    assert feed_all([STREAM[:cut], STREAM[cut:]]) == EXPECTED


def test_done_marker_and_incomplete_tail() -> None:
    parser = SseParser()
    events = parser.feed(b"data: [DONE]\n\ndata: partial")
    assert [e.is_done for e in events] == [True]
    assert parser.feed(b"\n") == []  # the event is complete only at the blank line
    assert parser.feed(b"\n") == [SseEvent("partial")]


def test_byte_order_mark_and_field_without_colon() -> None:
    events = feed_all([b"\xef\xbb\xbfdata: x\n", b"data\n\n"])
    assert events == [SseEvent("x\n")]


def test_lone_carriage_return_waits_for_the_next_byte() -> None:
    parser = SseParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\n\r\n") == [SseEvent("a")]
