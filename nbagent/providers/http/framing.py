"""Stream framing: Server-Sent Events and newline-delimited JSON, from raw bytes.

Both parsers are incremental and take bytes in any split (a network read, a
recorded body cut at random), so decoders use them on live streams and tests and
benchmarks on recorded bodies alike.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import Any

from pydantic_core import from_json

__all__ = ["MAX_LINE_BYTES", "LineTooLong", "NDJSONParser", "SSEEvent", "SSEParser"]


@dataclass(slots=True)
class SSEEvent:
    """One Server-Sent Event: its ``event:`` name ("" when absent) and joined ``data:``."""

    event: str
    data: str


MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest line (NDJSON) or event (SSE) a stream may send: 16 MiB. Past it,
:class:`LineTooLong` (a stream never needs it; an endless line would pin a core)."""


class LineTooLong(ValueError):
    """A stream line (or SSE event) grew past the parser's limit."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            f"a stream line grew past {limit:,} bytes ({size:,} so far) without ending"
        )


class SSEParser:
    r"""Incremental Server-Sent Events parser (WHATWG framing).

    Feed raw bytes in any split; get complete events back. Events end at a blank
    line (``\n\n``, ``\r\n\r\n`` or ``\r\r``); several ``data:`` lines are joined
    with ``\n``; one space after the colon is dropped; ``:`` comments, ``id:``,
    ``retry:`` and unknown fields are ignored.

    Linear in the bytes fed, however an event is split: only the new text is
    searched for an event's end, and an unfinished event's pieces are joined once,
    when it ends. An event longer than ``max_event`` raises :class:`LineTooLong`.
    """

    __slots__ = ("_decoder", "_pieces", "_size", "_held_cr", "max_event")

    def __init__(self, max_event: int = MAX_LINE_BYTES) -> None:
        # "utf-8-sig" drops a byte-order mark at the start of the stream, as the spec asks.
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
        self._pieces: list[str] = []  # the unfinished event, as it came
        self._size = 0
        self._held_cr = False
        self.max_event = max_event

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """The events that ``chunk`` completes."""
        text = self._decoder.decode(chunk)
        if self._held_cr:
            text = "\r" + text
            self._held_cr = False
        if "\r" in text:
            # A "\r\n" may be split across chunks: keep a trailing "\r" for later.
            if text.endswith("\r"):
                text = text[:-1]
                self._held_cr = True
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if not text:
            return []
        pieces = self._pieces
        ends = "\n\n" in text or (
            text[0] == "\n" and pieces and pieces[-1][-1] == "\n"  # "\n" + "\n" across feeds
        )
        if not ends:
            pieces.append(text)
            self._size += len(text)
            if self._size > self.max_event:
                self._reset()
                raise LineTooLong(self._size, self.max_event)
            return []
        buffer = "".join(pieces) + text if pieces else text
        blocks = buffer.split("\n\n")
        rest = blocks.pop()
        self._pieces = [rest] if rest else []
        self._size = len(rest)
        if self._size > self.max_event:
            self._reset()
            raise LineTooLong(len(rest), self.max_event)
        events = []
        for block in blocks:
            if len(block) > self.max_event:
                self._reset()
                raise LineTooLong(len(block), self.max_event)
            event = _parse_block(block)
            if event is not None:
                events.append(event)
        return events

    def _reset(self) -> None:
        self._pieces = []
        self._size = 0

    def close(self) -> list[SSEEvent]:
        """The event left without its closing blank line, if any (lenient on purpose)."""
        rest = "".join(self._pieces) + self._decoder.decode(b"", final=True)
        self._reset()
        self._held_cr = False
        event = _parse_block(rest.replace("\r\n", "\n").replace("\r", "\n").strip("\n"))
        return [event] if event is not None else []


def _parse_block(block: str) -> SSEEvent | None:
    # Fast paths: a single "data: {...}" line (OpenAI, Gemini) and an
    # "event: name" line plus one "data:" line (Anthropic).
    if block.startswith("data: "):
        if "\n" not in block:
            return SSEEvent("", block[6:])
    elif block.startswith("event: "):
        end = block.find("\n")
        if end > 0 and block.startswith("data: ", end + 1) and block.find("\n", end + 1) < 0:
            return SSEEvent(block[7:end], block[end + 7 :])
    name = ""
    data: list[str] = []
    for line in block.split("\n"):
        if not line or line[0] == ":":
            continue
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "event":
            name = value
    if not data:
        return None  # per spec an event without data is not dispatched
    return SSEEvent(name, "\n".join(data))


class NDJSONParser:
    """Incremental newline-delimited JSON parser: feed bytes, get parsed values.

    JSON is decoded by pydantic-core (already a dependency), about 3x faster than
    the standard library on the small objects streams are made of.

    Raises ``ValueError`` on a malformed line (the session turns it into a
    ProviderError naming the provider).
    """

    __slots__ = ("_pieces", "_size", "max_line")

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self._pieces: list[bytes] = []  # the unfinished line, as it came
        self._size = 0
        self.max_line = max_line

    def lines(self, chunk: bytes) -> list[bytes]:
        """The complete, non-blank lines that ``chunk`` finishes (not yet parsed).

        Linear in the bytes fed: only ``chunk`` is searched for a newline, and an
        unfinished line's pieces are joined once. A line longer than ``max_line``
        raises :class:`LineTooLong`.
        """
        if b"\n" not in chunk:
            self._pieces.append(chunk)
            self._size += len(chunk)
            if self._size > self.max_line:
                size, self._pieces, self._size = self._size, [], 0
                raise LineTooLong(size, self.max_line)
            return []
        buffer = b"".join(self._pieces) + chunk if self._pieces else chunk
        lines = buffer.split(b"\n")
        rest = lines.pop()
        self._pieces = [rest] if rest else []
        self._size = len(rest)
        if len(buffer) > self.max_line:
            longest = max(self._size, *map(len, lines))
            if longest > self.max_line:
                self._pieces, self._size = [], 0
                raise LineTooLong(longest, self.max_line)
        return [line for line in lines if line.strip()]

    def close_lines(self) -> list[bytes]:
        """The last line when the stream ended without a newline."""
        rest = b"".join(self._pieces)
        self._pieces, self._size = [], 0
        return [rest] if rest.strip() else []

    def feed(self, chunk: bytes) -> list[Any]:
        """The values of the lines that ``chunk`` completes."""
        return [from_json(line) for line in self.lines(chunk)]

    def close(self) -> list[Any]:
        """The value of the last line, when the stream ended without a newline."""
        return [from_json(line) for line in self.close_lines()]
