"""The response reader is total: any bytes, split anywhere, give tokens or a failure."""

from __future__ import annotations

import json
from itertools import pairwise

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from llmsizer.bench.failure import Failure
from llmsizer.bench.reader import ResponseReader, plausible_tokens, status_failure
from llmsizer.bench.sse import SseParser


def sse(payload: object) -> bytes:
    return f"data: {json.dumps(payload)}\n\n".encode()


GOOD = (
    sse({"choices": [{"text": "a"}]})
    + sse({"choices": [{"text": "b"}]})
    + sse({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}})
    + b"data: [DONE]\n\n"
)


def read(pieces: list[bytes], max_tokens: int = 4) -> tuple[ResponseReader, Failure | None]:
    reader = ResponseReader(chat=False, max_tokens=max_tokens)
    reader.start("text/event-stream")
    for t, piece in enumerate(pieces):
        reader.feed(piece, float(t))
    return reader, reader.finish()


def test_a_good_stream() -> None:
    reader, failure = read([GOOD])
    assert failure is None and reader.done
    np.testing.assert_array_equal(reader.token_times(complete=True), [0.0, 0.0])


def test_bytes_after_done_are_ignored() -> None:
    _, failure = read([GOOD, b"data: {not json\n\n", b"\xff" * 10])
    assert failure is None


def test_failure_after_done_changes_nothing() -> None:
    reader, _ = read([GOOD])
    reader.fail(Failure("stream dropped", "reset"))
    assert reader.finish() is None


@settings(max_examples=300, deadline=None)
@given(
    body=st.one_of(
        st.binary(max_size=400),
        st.lists(
            st.sampled_from(
                [GOOD, b"data: ", b"[1, 2]", b"{", b'"usage"', b"\r", b"\n", b"\xff", b": x\n"]
            ),
            max_size=12,
        ).map(b"".join),
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=6),
)
def test_any_bytes_any_split_never_raise(body: bytes, cuts: list[int]) -> None:
    bounds = sorted({0, len(body), *(c for c in cuts if c < len(body))})
    pieces = [body[a:b] for a, b in pairwise(bounds)]
    reader, failure = read(pieces)
    times = reader.token_times(complete=failure is None)
    if failure is None:
        assert reader.done and times.size == reader.tally.completion_tokens
    else:
        assert failure.kind and failure.detail


def test_html_page_is_not_an_event_stream() -> None:
    reader = ResponseReader(chat=False, max_tokens=4)
    reader.start("text/html")
    reader.feed(b"<html><body>Welcome to nginx</body></html>", 0.0)
    assert str(reader.finish()) == (
        "not an event stream: 200 with text/html, body starts "
        "'<html><body>Welcome to nginx</body></html>'"
    )


def test_empty_body_and_cut_stream() -> None:
    assert "empty body" in str(read([])[1])
    assert str(read([GOOD[:40]])[1]) == "stream dropped: ended before [DONE]"


def test_oversized_event() -> None:
    reader = ResponseReader(chat=False, max_tokens=4, _parser=SseParser(max_event_chars=100))
    reader.feed(b"data: " + b"x" * 200, 0.0)
    assert str(reader.finish()).startswith("oversized event: a line of over 100 characters")


def test_counts_that_go_down_or_are_absurd() -> None:
    down = [sse({"choices": [{"text": "a"}], "usage": {"completion_tokens": n}}) for n in (3, 2)]
    assert "went down from 3 to 2" in str(read(down)[1])
    huge = [sse({"choices": [], "usage": {"completion_tokens": plausible_tokens(4) + 1}})]
    assert "is 141 for max_tokens 4" in str(read(huge)[1])


def test_status_failures_say_what_to_do() -> None:
    assert str(status_failure(429, {"retry-after": "2"}, b"slow down")) == (
        "HTTP 429: retry after 2 s; slow down"
    )
    moved = status_failure(302, {"location": "/login"}, b"")
    assert str(moved) == "HTTP 302: redirect to /login, not followed; (empty body)"
    assert str(status_failure(500, {}, b"<h1>\n Oops \n</h1>")) == "HTTP 500: <h1> Oops </h1>"
