"""What a request streamed before its stream was cut: the output side of a usage estimate."""

from __future__ import annotations

import math
from collections.abc import Callable

from ..messages import Usage
from ..providers.base import ModelRequest, ProviderEvent, TextChunk, ToolCallReady
from .budget import TokenMeter

__all__ = ["BYTES_PER_TOKEN", "CUT_STREAM_NOTE", "StreamedBytes"]

BYTES_PER_TOKEN = 3
"""The high-side estimate of output tokens: UTF-8 bytes / 3 (as ``run.budget`` does for input)."""

CUT_STREAM_NOTE = "tokens estimated: the stream stopped before the server reported usage"


class StreamedBytes:
    """Passes provider events on, counting the UTF-8 bytes of streamed text and calls.

    What a request had produced when its stream was cut, for :meth:`estimate`.
    """

    __slots__ = ("count", "on_event", "request")

    def __init__(
        self, request: ModelRequest, on_event: Callable[[ProviderEvent], None] | None
    ) -> None:
        self.request = request
        self.on_event = on_event
        self.count = 0

    def __call__(self, event: ProviderEvent) -> None:
        """Count ``event``'s output bytes, then hand it on."""
        if isinstance(event, TextChunk):
            self.count += len(event.text.encode("utf-8"))
        elif isinstance(event, ToolCallReady):
            self.count += len((event.call.raw_arguments or "").encode("utf-8"))
            self.count += len(event.call.name)
        if self.on_event is not None:
            self.on_event(event)

    def estimate(self, meter: TokenMeter) -> Usage:
        """The request's usage, estimated: its usage report, sent last, never came.

        Once text or a call has streamed, the server has read the whole request and
        written that much: input is estimated from the request (``meter``), output
        from the bytes that arrived, on the high side (bytes / 3, as for input).
        """
        output = math.ceil(self.count / BYTES_PER_TOKEN)
        return Usage(meter.estimate(self.request), output, estimated=True)
