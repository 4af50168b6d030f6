"""Read one streamed response as its bytes arrive: tokens and their times, or a failure.

    reader = ResponseReader(chat=False, max_tokens=128)
    reader.start(content_type)          # the response's headers arrived (status 200)
    reader.feed(piece, t_s)             # per network read, stamped when the read returned
    failure = reader.finish()           # the body ended: None when it is a whole measurement
    times = reader.token_times(complete=failure is None)

Pure and total: no I/O and no clock, and no byte sequence makes it raise. The first thing
wrong (an oversized event, bad JSON, a chunk of the wrong shape, bad counts, an error event)
becomes `failure`, and the reader takes no more bytes; everything after `[DONE]` is ignored.
`token_times` keeps the tokens that arrived before a failure, so a failed request still
tells when its first tokens came.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from llmsizer.bench.failure import MAX_DETAIL_CHARS, Failure, FailureKind, brief
from llmsizer.bench.sse import EventTooLarge, SseParser
from llmsizer.bench.stream import Chunk, assign_token_times, decode_event

# A server may overshoot max_tokens a little (special tokens, templates), never by this much;
# believing a larger count would build a token-time array of that length.
_TOKENS_FACTOR, _TOKENS_SLACK = 10, 100


def plausible_tokens(max_tokens: int) -> int:
    """The largest `usage.completion_tokens` believed for a request of `max_tokens`."""
    return _TOKENS_FACTOR * max_tokens + _TOKENS_SLACK


@dataclass(slots=True)
class Tally:
    """What has arrived so far for one request."""

    chunk_times_s: list[float] = field(default_factory=list)
    chunk_counts: list[int] = field(default_factory=list)
    completion_tokens: int | None = None
    prompt_tokens: int | None = None
    counts_known: bool = True  # every token-bearing chunk came with cumulative usage
    done: bool = False

    def add(self, chunk: Chunk, t_s: float, max_tokens: int) -> Failure | None:
        """Count `chunk`, seen at `t_s`; a count that goes down or is absurd is a failure."""
        new = chunk.completion_tokens
        if new is not None:
            before = self.completion_tokens or 0
            if new < before:
                detail = f"usage.completion_tokens went down from {before} to {new}"
                return Failure(FailureKind.BAD_USAGE, detail)
            if new > plausible_tokens(max_tokens):
                detail = f"usage.completion_tokens is {new} for max_tokens {max_tokens}"
                return Failure(FailureKind.BAD_USAGE, detail)
        if chunk.carries_tokens:
            self.chunk_times_s.append(t_s)
            if new is None:
                self.counts_known = False
                self.chunk_counts.append(1)
            else:
                self.chunk_counts.append(new - (self.completion_tokens or 0))
        if new is not None:
            self.completion_tokens = new
        if chunk.prompt_tokens is not None:
            self.prompt_tokens = chunk.prompt_tokens
        return None

    def token_times(self, num_tokens: int) -> np.ndarray:
        counts = self.chunk_counts if self.counts_known else None
        return assign_token_times(self.chunk_times_s, num_tokens, counts)


@dataclass(slots=True)
class ResponseReader:
    """One response's reading state (see the module notes). `max_tokens` is what was asked."""

    chat: bool
    max_tokens: int
    tally: Tally = field(default_factory=Tally)
    failure: Failure | None = None
    responded: bool = False  # the response's headers arrived
    content_type: str = ""
    num_events: int = 0
    head: bytes = b""  # the body's first bytes, quoted when it holds no event
    _parser: SseParser = field(default_factory=SseParser)

    @property
    def done(self) -> bool:
        """`[DONE]` arrived: everything to measure is in."""
        return self.tally.done

    def start(self, content_type: str) -> None:
        self.responded, self.content_type = True, content_type

    def fail(self, failure: Failure) -> None:
        """Note a failure found outside the body (a status, a network error); the first one
        counts. After `[DONE]` everything measured is in, so a failure then (a server that
        holds the connection open, then drops it) changes nothing."""
        if self.failure is None and not self.done:
            self.failure = failure

    def feed(self, piece: bytes, t_s: float) -> Failure | None:
        """Read one network read's bytes, all of which arrived at `t_s`; the failure, if any."""
        if self.failure is not None or self.done:
            return self.failure
        if len(self.head) < MAX_DETAIL_CHARS:
            self.head += piece[: MAX_DETAIL_CHARS - len(self.head)]
        try:
            events = self._parser.feed(piece)
        except EventTooLarge as e:
            self.failure = Failure(FailureKind.OVERSIZED, str(e))
            return self.failure
        for event in events:
            self.num_events += 1
            if event.is_done:
                self.tally.done = True
                return None
            chunk = decode_event(event.data, chat=self.chat)
            failure = chunk if isinstance(chunk, Failure) else self._add(chunk, t_s)
            if failure is not None:
                self.failure = failure
                return failure
        return None

    def _add(self, chunk: Chunk, t_s: float) -> Failure | None:
        return self.tally.add(chunk, t_s, self.max_tokens)

    def finish(self) -> Failure | None:
        """Why the response, now over, is not a whole measurement; None when it is."""
        if self.failure is not None:
            return self.failure
        if not self.done:
            if self.num_events == 0:
                return Failure(FailureKind.NOT_EVENT_STREAM, self._body_detail())
            return Failure(FailureKind.DROPPED, "ended before [DONE]")
        if self.tally.completion_tokens is None:
            detail = "the server sent no usage (stream_options.include_usage unsupported?)"
            return Failure(FailureKind.NO_USAGE, detail)
        if not self.tally.chunk_times_s or self.tally.completion_tokens == 0:
            return Failure(FailureKind.NO_TOKENS, "the stream carried no output")
        return None

    def _body_detail(self) -> str:
        kind = self.content_type or "no Content-Type"
        if not self.head:
            return f"200 with {kind} and an empty body"
        text = self.head.decode("utf-8", errors="replace")
        return f"200 with {kind}, body starts {brief(text)}"

    def token_times(self, *, complete: bool) -> np.ndarray:
        """Per-token times: as many as `usage` counts when `complete` (a successful request),
        else as many as the chunks that arrived carried."""
        num_tokens = self.tally.completion_tokens if complete else None
        if num_tokens is None:
            num_tokens = sum(self.tally.chunk_counts)
        return self.tally.token_times(num_tokens)


def status_failure(status: int, headers: Mapping[str, str], body_start: bytes) -> Failure:
    """An answer other than 200: its status, what its headers advise, and its body's start."""
    text = " ".join(body_start.decode("utf-8", errors="replace").split())[:MAX_DETAIL_CHARS]
    parts = []
    if "retry-after" in headers:
        parts.append(f"retry after {headers['retry-after'][:40]} s")
    if 300 <= status < 400:
        where = headers.get("location", "(no Location)")[:MAX_DETAIL_CHARS]
        parts.append(f"redirect to {where}, not followed")
    parts.append(text or "(empty body)")
    return Failure.http_status(status, "; ".join(parts))
