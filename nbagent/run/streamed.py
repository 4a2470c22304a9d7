"""What a request streamed before its stream was cut: the output side of a usage estimate."""

from __future__ import annotations

import math

from ..messages import Usage
from ..providers.base import ModelRequest
from .budget import TokenMeter

__all__ = ["BYTES_PER_TOKEN", "CUT_STREAM_NOTE", "StreamedBytes"]

BYTES_PER_TOKEN = 3
"""The high-side estimate of output tokens: UTF-8 bytes / 3 (as ``run.budget`` does for input)."""

CUT_STREAM_NOTE = "tokens estimated: the stream stopped before the server reported usage"


class StreamedBytes:
    """The UTF-8 bytes of text and calls a request has streamed so far.

    :func:`~nbagent.run.steps.send_request` keeps its count here (not in a local), so
    what a request had produced when its stream was cut survives the cut, for
    :meth:`estimate`.
    """

    __slots__ = ("count", "request")

    def __init__(self, request: ModelRequest) -> None:
        self.request = request
        self.count = 0

    def estimate(self, meter: TokenMeter) -> Usage:
        """The request's usage, estimated: its usage report, sent last, never came.

        Once text or a call has streamed, the server has read the whole request and
        written that much: input is estimated from the request (``meter``), output
        from the bytes that arrived, on the high side (bytes / 3, as for input).
        """
        output = math.ceil(self.count / BYTES_PER_TOKEN)
        return Usage(meter.estimate(self.request), output, estimated=True)
