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

__all__ = ["NDJSONParser", "SSEEvent", "SSEParser"]


@dataclass(slots=True)
class SSEEvent:
    """One Server-Sent Event: its ``event:`` name ("" when absent) and joined ``data:``."""

    event: str
    data: str


class SSEParser:
    r"""Incremental Server-Sent Events parser (WHATWG framing).

    Feed raw bytes in any split; get complete events back. Events end at a blank
    line (``\n\n``, ``\r\n\r\n`` or ``\r\r``); several ``data:`` lines are joined
    with ``\n``; one space after the colon is dropped; ``:`` comments, ``id:``,
    ``retry:`` and unknown fields are ignored.
    """

    __slots__ = ("_decoder", "_buffer", "_held_cr")

    def __init__(self) -> None:
        # "utf-8-sig" drops a byte-order mark at the start of the stream, as the spec asks.
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
        self._buffer = ""
        self._held_cr = False

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
        buffer = self._buffer + text if self._buffer else text
        if "\n\n" not in buffer:
            self._buffer = buffer
            return []
        blocks = buffer.split("\n\n")
        self._buffer = blocks.pop()
        events = []
        for block in blocks:
            event = _parse_block(block)
            if event is not None:
                events.append(event)
        return events

    def close(self) -> list[SSEEvent]:
        """The event left without its closing blank line, if any (lenient on purpose)."""
        rest = self._buffer + self._decoder.decode(b"", final=True)
        self._buffer = ""
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

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = b""

    def lines(self, chunk: bytes) -> list[bytes]:
        """The complete, non-blank lines that ``chunk`` finishes (not yet parsed)."""
        buffer = self._buffer + chunk if self._buffer else chunk
        if b"\n" not in buffer:
            self._buffer = buffer
            return []
        lines = buffer.split(b"\n")
        self._buffer = lines.pop()
        return [line for line in lines if line.strip()]

    def close_lines(self) -> list[bytes]:
        """The last line when the stream ended without a newline."""
        rest, self._buffer = self._buffer, b""
        return [rest] if rest.strip() else []

    def feed(self, chunk: bytes) -> list[Any]:
        """The values of the lines that ``chunk`` completes."""
        return [from_json(line) for line in self.lines(chunk)]

    def close(self) -> list[Any]:
        """The value of the last line, when the stream ended without a newline."""
        return [from_json(line) for line in self.close_lines()]
