"""An incremental parser for server-sent events (the `text/event-stream` format).

Pure: it is fed bytes in whatever pieces the network delivers and returns the events that
those bytes complete. It knows nothing about OpenAI or JSON; `stream.py` reads the payloads.

The rules follow the WHATWG HTML standard, section "Interpreting an event stream":

- lines end with `\\r\\n`, `\\n` or `\\r` (a `\\r` at the end of a piece may be the first half
  of a `\\r\\n` split across two pieces, so the parser waits for the next byte);
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
_LINE_END = re.compile(r"\r\n|\r|\n")


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
    """Feed bytes with `feed`; it returns every event completed so far, in order."""

    _decoder: codecs.IncrementalDecoder = field(
        default_factory=lambda: codecs.getincrementaldecoder("utf-8")(errors="replace")
    )
    _buffer: str = ""
    _data: list[str] = field(default_factory=list)
    _event: str = ""
    _started: bool = False

    def feed(self, chunk: bytes) -> list[SseEvent]:
        text = self._decoder.decode(chunk)
        if not self._started and text:
            text = text.removeprefix("\ufeff")  # a byte-order mark may open the stream
            self._started = True
        self._buffer += text
        events: list[SseEvent] = []
        for line in self._complete_lines():
            event = self._process_line(line)
            if event is not None:
                events.append(event)
        return events

    def _complete_lines(self) -> list[str]:
        """Split off the complete lines, keeping a trailing partial line (or a lone `\\r`)."""
        buf = self._buffer
        lines: list[str] = []
        start = 0
        for end in _LINE_END.finditer(buf):
            if end.group() == "\r" and end.end() == len(buf):
                break  # may be half of a "\r\n" split across pieces: wait for more
            lines.append(buf[start : end.start()])
            start = end.end()
        self._buffer = buf[start:]
        return lines

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
        elif name == "event":
            self._event = value
        # `id` and `retry` matter for reconnection only, which a benchmark never does.
        return None

    def _dispatch(self) -> SseEvent | None:
        data, event = self._data, self._event
        self._data, self._event = [], ""
        if not data:
            return None
        return SseEvent(data="\n".join(data), event=event or "message")
