"""HTTP for the adapters: the template, decoders, framing, errors, retries, sessions.

* ``template.py``: :class:`HttpProvider`, the base every HTTP adapter subclasses;
* ``decoding.py``: :class:`SSEDecoder` / :class:`NDJSONDecoder`, bytes in, events out;
* ``framing.py``: the incremental SSE and NDJSON parsers;
* ``errors.py``: every API's error bodies as ProviderError, secrets redacted;
* ``retry.py``: which failures are retried, and the waits;
* ``session.py``: :class:`HttpSession`, a client per event loop, the request itself.
"""

from __future__ import annotations

from .decoding import Decoder, FramedDecoder, NDJSONDecoder, SSEDecoder
from .errors import ErrorReporter, error_from_body, payload_error
from .framing import NDJSONParser, SSEEvent, SSEParser
from .retry import RetryPolicy, retry_after
from .session import DEFAULT_TIMEOUT, HttpSession, join_url
from .template import HttpProvider

__all__ = [
    "DEFAULT_TIMEOUT",
    "Decoder",
    "ErrorReporter",
    "FramedDecoder",
    "HttpProvider",
    "HttpSession",
    "NDJSONDecoder",
    "NDJSONParser",
    "RetryPolicy",
    "SSEDecoder",
    "SSEEvent",
    "SSEParser",
    "error_from_body",
    "join_url",
    "payload_error",
    "retry_after",
]
