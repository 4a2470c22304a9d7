"""Decoders: a response body's bytes in, provider events out.

Every HTTP adapter has a decoder with the same two methods, whatever its API::

    decoder = OpenAIDecoder(stream=True)
    events = decoder.feed(piece)     # any split: one network read, a recorded body...
    events += decoder.close()        # the body ended cleanly

A non-streamed reply goes through the same decoder (``stream=False``: fed the
whole JSON body, decoded at :meth:`~FramedDecoder.close`), so a test can check a
decoder on a recorded body without a server.

An adapter's decoder subclasses :class:`SSEDecoder` or :class:`NDJSONDecoder`,
which do the framing, parse each payload's JSON and catch error payloads, and
implements three steps:

* ``decode(items)``: the payloads of one ``feed`` (one network read), in order;
  returning one TextChunk for all of their text keeps the events few;
* ``end()``: the stream ended cleanly (raise when its terminator never came);
* ``reply(payload)``: a whole non-streamed reply.

An error payload inside a 200 response (or a malformed chunk) ends decoding:
``feed`` returns the events of the payloads before it and sets :attr:`error`,
which the caller raises once it has passed those events on (:meth:`close` raises
it too).
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

from pydantic_core import from_json

from ...errors import ProviderError
from ..base import ProviderEvent
from .errors import payload_error
from .framing import LineTooLong, NDJSONParser, SSEEvent, SSEParser

__all__ = ["Decoder", "FramedDecoder", "NDJSONDecoder", "SSEDecoder"]


class Decoder(Protocol):
    """What the template needs of a decoder."""

    error: ProviderError | None
    """Set when the body carried an error: raise it after the events ``feed`` returned."""

    def feed(self, chunk: bytes) -> list[ProviderEvent]:
        """The events completed by ``chunk`` (the next bytes of the body)."""
        ...

    def close(self) -> list[ProviderEvent]:
        """The last events, once the body ended cleanly; raises when it was incomplete."""
        ...


class DecoderWrapper:
    """A decoder around another one (``inner``), whose pending error it shares.

    For decoders that look at, or keep, what an adapter's own decoder produces
    (tool calls written as text, the raw-response log).
    """

    def __init__(self, inner: Decoder) -> None:
        self.inner = inner

    @property
    def error(self) -> ProviderError | None:
        """The inner decoder's pending error."""
        return self.inner.error

    @error.setter
    def error(self, value: ProviderError | None) -> None:
        self.inner.error = value


class FramedDecoder:
    """What both framings share: ``feed``/``close``, the whole reply, the pending error.

    A framing subclass implements ``_frames(chunk)`` (the events completed by the
    next bytes of a stream) and ``_last_frames()`` (those of what is left at its end).

    Args:
        stream: False for a non-streamed reply (one JSON document).
    """

    provider: ClassVar[str] = ""
    """The provider name that errors carry."""

    def __init__(self, *, stream: bool = True) -> None:
        self.stream = stream
        self.error: ProviderError | None = None
        self._body: list[bytes] = []  # a non-streamed reply, joined at close

    # -- what an adapter implements -------------------------------------------------

    def decode(self, items: list[Any]) -> list[ProviderEvent]:
        """Events for the payloads of one ``feed``, in order."""
        raise NotImplementedError

    def end(self) -> list[ProviderEvent]:
        """Events once the stream ended cleanly; raise if it ended too early."""
        return []

    def reply(self, payload: Any) -> list[ProviderEvent]:
        """Events for a whole non-streamed reply (parsed JSON, not an error payload)."""
        raise NotImplementedError

    # -- the decoder's two methods ------------------------------------------------------

    def feed(self, chunk: bytes) -> list[ProviderEvent]:
        """The events completed by ``chunk`` (the next bytes of the body)."""
        if not self.stream:
            self._body.append(chunk)
            return []
        if self.error is not None:
            raise self.error
        return self._frames(chunk)

    def close(self) -> list[ProviderEvent]:
        """The last events; the adapter's ``end()`` decides whether the stream was complete."""
        if self.error is not None:
            raise self.error
        if not self.stream:
            return self._whole_reply()
        events = self._last_frames()
        if self.error is not None:
            raise self.error
        return events + self.end()

    def fail(self, error_type: str, message: str) -> ProviderError:
        """A ProviderError of this decoder's provider (no HTTP status: the body was 200)."""
        return ProviderError(self.provider, None, error_type, message)

    # -- framing ----------------------------------------------------------------------

    def _frames(self, chunk: bytes) -> list[ProviderEvent]:
        raise NotImplementedError

    def _last_frames(self) -> list[ProviderEvent]:
        raise NotImplementedError

    def _whole_reply(self) -> list[ProviderEvent]:
        raw = b"".join(self._body)  # one piece (the usual case) is not copied
        try:
            payload = from_json(raw)
        except ValueError:
            snippet = raw[:200].decode("utf-8", "replace")
            raise self.fail("malformed_response", f"reply is not JSON: {snippet!r}") from None
        if isinstance(payload, dict) and payload.get("error"):
            raise payload_error(self.provider, payload)
        return self.reply(payload)

    def _checked(self, payload: Any) -> bool:
        """False, with :attr:`error` set, when ``payload`` is an error payload."""
        if type(payload) is dict and payload.get("error"):
            self.error = payload_error(self.provider, payload)
            return False
        return True


_NO_PARSER = SSEParser()
"""Stands in for the parser of a non-streamed reply (never fed)."""


class SSEDecoder(FramedDecoder):
    """Server-Sent Events: ``decode`` gets ``(event_name, payload)`` pairs.

    ``payload`` is the parsed JSON of ``data:``, or its raw text when it does not look
    like JSON (``"[DONE]"``). A server that ignores ``"stream"`` and answers with one
    plain JSON document is handled too: it is decoded as ``[("", document)]``.
    """

    def __init__(self, *, stream: bool = True) -> None:
        super().__init__(stream=stream)
        # Not needed for a whole reply (and not free to make: it holds a text decoder).
        self._parser = SSEParser() if stream else _NO_PARSER
        # Kept until the first event: the whole body if it turns out to be plain JSON.
        self._head: bytearray | None = bytearray()

    def _frames(self, chunk: bytes) -> list[ProviderEvent]:
        try:
            events = self._parser.feed(chunk)
        except LineTooLong as exc:
            self.error = self.fail("line_too_long", f"stream rejected: {exc}")
            self._head = None
            return []
        if self._head is not None:
            if not events:
                self._head += chunk
                return []
            self._head = None
        return self._decode_events(events) if events else []

    def _last_frames(self) -> list[ProviderEvent]:
        events = self._parser.close()
        out: list[ProviderEvent] = []
        if self._head is not None and not events:
            whole = self._whole_json(bytes(self._head))
            if whole is not None:
                out += self.decode([("", whole)])
        self._head = None
        return out + self._decode_events(events) if events else out

    def _decode_events(self, events: list[SSEEvent]) -> list[ProviderEvent]:
        batch: list[tuple[str, Any]] = []
        for event in events:
            data = event.data
            first = data[:1]
            if first == "{" or (first == "[" and data != "[DONE]"):
                try:
                    payload = from_json(data)
                except ValueError:
                    self.error = self.fail(
                        "malformed_chunk", f"malformed chunk in stream: {data[:200]!r}"
                    )
                    break
                if not self._checked(payload):
                    break
                batch.append((event.event, payload))
            else:
                batch.append((event.event, data))
        return self.decode(batch) if batch else []

    def _whole_json(self, raw: bytes) -> Any:
        """A stream body that was one JSON document instead of events (or None)."""
        if raw.lstrip()[:1] not in (b"{", b"["):
            return None
        try:
            payload = from_json(raw)
        except ValueError:
            return None
        # Gemini wraps its error payload in a list.
        first = payload[0] if type(payload) is list and payload else payload
        if type(first) is dict and first.get("error"):
            raise payload_error(self.provider, first)
        return payload


class NDJSONDecoder(FramedDecoder):
    """Newline-delimited JSON: ``decode`` gets the parsed values of complete lines."""

    def __init__(self, *, stream: bool = True) -> None:
        super().__init__(stream=stream)
        self._parser = NDJSONParser()

    def _frames(self, chunk: bytes) -> list[ProviderEvent]:
        try:
            lines = self._parser.lines(chunk)
        except LineTooLong as exc:
            self.error = self.fail("line_too_long", f"stream rejected: {exc}")
            return []
        return self._decode_lines(lines) if lines else []

    def _last_frames(self) -> list[ProviderEvent]:
        return self._decode_lines(self._parser.close_lines())

    def _decode_lines(self, lines: list[bytes]) -> list[ProviderEvent]:
        batch: list[Any] = []
        for line in lines:
            try:
                value = from_json(line)
            except ValueError as exc:
                self.error = self.fail("malformed_chunk", f"malformed chunk in stream: {exc}")
                break
            if not self._checked(value):
                break
            batch.append(value)
        return self.decode(batch) if batch else []
