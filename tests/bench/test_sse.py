"""The SSE parser gives the same events however the bytes are split."""

from __future__ import annotations

import time

import pytest

from llmsizer.bench.sse import EventTooLarge, SseEvent, SseParser

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


def test_a_huge_line_costs_linear_time() -> None:
    """32 MB in 64 KB pieces: each piece is searched once (it was re-searched from the start)."""
    line = b"data: " + b"x" * (32 * 2**20) + b"\n\n"
    parser = SseParser()
    start = time.perf_counter()
    events = [e for i in range(0, len(line), 2**16) for e in parser.feed(line[i : i + 2**16])]
    assert time.perf_counter() - start < 5.0
    assert len(events) == 1 and len(events[0].data) == 32 * 2**20


@pytest.mark.parametrize(
    ("pieces", "what"),
    [
        ([b"data: " + b"y" * 60, b"y" * 60], "a line of over 100 characters"),
        ([b"data: " + b"y" * 60 + b"\ndata: " + b"y" * 60 + b"\n"], "an event of over 100"),
    ],
)
def test_an_endless_line_or_event_is_an_error(pieces: list[bytes], what: str) -> None:
    parser = SseParser(max_event_chars=100)
    with pytest.raises(EventTooLarge, match=what):
        for piece in pieces:
            parser.feed(piece)
