"""An incremental parser for server-sent events (the `text/event-stream` format).

Pure: it is fed bytes in whatever pieces the network delivers and returns the events that
those bytes complete. It knows nothing about OpenAI or JSON; `stream.py` reads the payloads.

The rules follow the WHATWG HTML standard, section "Interpreting an event stream":

- lines end with `\\r\\n`, `\\n` or `\\r` (a `\\r` at the end of a piece may be the first half
  of a `\\r\\n` split across two pieces, so a `\\n` opening the next piece is skipped);
- a line starting with `:` is a comment (servers send them as keep-alive pings);
- `field: value` (one optional space after the colon); several `data` lines of one event are
  joined with `\\n`;
- a blank line dispatches the event; an event with no `data` line is dropped;
- text is UTF-8, and a multi-byte character may be split across pieces.

`[DONE]` is an ordinary data payload here; OpenAI-style streams use it as their end marker,
which `SseEvent.is_done` names.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field

DONE = "[DONE]"
MAX_EVENT_CHARS = 64 * 2**20  # one event's data; far above any real chunk (MBs of text)
_LINE_END = re.compile(r"\r\n|\r|\n")


class EventTooLarge(ValueError):
    """An event (or a line) grew past the parser's limit; the stream cannot be read on."""


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event: its `data` lines joined with newlines, and its `event` name."""

    data: str
    event: str = "message"

    @property
    def is_done(self) -> bool:
        return self.data.strip() == DONE


@dataclass(slots=True)
class SseParser:
    """Feed bytes with `feed`; it returns every event completed so far, in order.

    Work and memory are linear in the bytes fed, however they are split: only new text is
    searched for line ends, and a partial line waits as a list of pieces. An event or line
    longer than `max_event_chars` raises `EventTooLarge` (a server that never ends a line
    would otherwise fill memory).
    """

    max_event_chars: int = MAX_EVENT_CHARS
    _decoder: codecs.IncrementalDecoder = field(
        default_factory=lambda: codecs.getincrementaldecoder("utf-8")(errors="replace")
    )
    _partial: list[str] = field(default_factory=list)  # the current line, not yet ended
    _partial_chars: int = 0
    _after_cr: bool = False  # the last line ended with "\r": a "\n" next belongs to it
    _data: list[str] = field(default_factory=list)
    _data_chars: int = 0
    _event: str = ""
    _started: bool = False

    def feed(self, chunk: bytes) -> list[SseEvent]:
        text = self._decoder.decode(chunk)
        if not self._started and text:
            text = text.removeprefix("\ufeff")  # a byte-order mark may open the stream
            self._started = True
        if self._after_cr and text:
            text = text.removeprefix("\n")
            self._after_cr = False
        events: list[SseEvent] = []
        start = 0
        for end in _LINE_END.finditer(text):
            line = "".join([*self._partial, text[start : end.start()]])
            self._partial, self._partial_chars = [], 0
            start = end.end()
            # a "\r" at the very end may be half of a "\r\n" split across two pieces
            self._after_cr = end.group() == "\r" and start == len(text)
            event = self._process_line(line)
            if event is not None:
                events.append(event)
        if start < len(text):
            self._partial.append(text[start:])
            self._partial_chars += len(text) - start
            self._check(self._partial_chars, "a line")
        return events

    def _check(self, num_chars: int, what: str) -> None:
        if num_chars > self.max_event_chars:
            raise EventTooLarge(
                f"{what} of over {self.max_event_chars:,} characters without an end"
            )

    def _process_line(self, line: str) -> SseEvent | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None  # comment
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._data_chars += len(value) + 1
            self._check(self._data_chars, "an event")
        elif name == "event":
            self._event = value
        # `id` and `retry` matter for reconnection only, which a benchmark never does.
        return None

    def _dispatch(self) -> SseEvent | None:
        data, event = self._data, self._event
        self._data, self._data_chars, self._event = [], 0, ""
        if not data:
            return None
        return SseEvent(data="\n".join(data), event=event or "message")
