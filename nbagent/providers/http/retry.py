"""When to retry a request, and how long to wait first.

Retries happen before the first response byte only (once a stream has started,
text may already be on screen): 408, 409, 429, 5xx (incl. 529) and connection
failures / timeouts, with exponential backoff and jitter, honouring
``x-should-retry``, ``retry-after-ms``, ``retry-after`` and Gemini's
``RetryInfo.retryDelay``. A 429 whose error says the quota or credit is
exhausted is never retried, nor is a server asking to wait longer than
:data:`MAX_RETRY_WAIT_S` (whatever ``x-should-retry`` says), nor one whose wait
would outlast the run (see :mod:`nbagent._internal.deadline`): those fail at once with the
provider's own message. Unparsable waits fall back to the normal backoff.
"""

from __future__ import annotations

import datetime
import email.utils
import math
import random
import re
import time
from collections.abc import Mapping

__all__ = [
    "MAX_RETRY_WAIT_S",
    "RETRY_STATUSES",
    "RetryPolicy",
    "finite_seconds",
    "retry_after",
    "should_retry_header",
]

RETRY_STATUSES = frozenset({408, 409, 429})
MAX_RETRY_WAIT_S = 120.0
"""A server asking us to wait longer than this is not retried (we report its message)."""

# Codes / phrases that mean "retrying will not help" on a 429.
_QUOTA_CODES = frozenset(
    {
        "insufficient_quota",
        "credit_balance_exhausted",
        "billing_hard_limit_reached",
        "billing_not_active",
        "quota_exceeded",
    }
)
_QUOTA_TEXT = re.compile(
    r"insufficient[_ ]quota|credit balance|billing|exceeded your current quota|quota exhausted",
    re.IGNORECASE,
)


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` or ``retry-after``.

    ``retry-after`` may be seconds or an HTTP date. A value that is not a finite,
    non-negative number or a date (``nan``, ``inf``, ``-5``, garbage) counts as
    absent: the normal backoff applies.
    """
    value = headers.get("retry-after-ms")
    if value:
        seconds = finite_seconds(value)
        if seconds is not None:
            return seconds / 1000.0
    value = headers.get("retry-after")
    if not value:
        return None
    seconds = finite_seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # "-0000": a date in UTC
        when = when.replace(tzinfo=datetime.timezone.utc)
    try:
        return max(0.0, when.timestamp() - time.time())
    except (OverflowError, OSError, ValueError):
        return None


def finite_seconds(text: str) -> float | None:
    """``text`` as a finite, non-negative number of seconds, or None."""
    try:
        seconds = float(text.strip())
    except (ValueError, AttributeError):
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def should_retry_header(headers: Mapping[str, str]) -> bool | None:
    """``x-should-retry`` as a bool (any case, spaces ignored); None when absent or unclear."""
    value = (headers.get("x-should-retry") or "").strip().lower()
    return {"true": True, "false": False}.get(value)


def _quota_exhausted(error_type: str | None, message: str, has_delay: bool) -> bool:
    parts = set(re.split(r"[/\s]", (error_type or "").lower()))
    if parts & _QUOTA_CODES:
        return True
    # Gemini's per-minute quota 429 says "exceeded your current quota" but comes with
    # a retryDelay: that one is worth waiting for.
    return not has_delay and bool(_QUOTA_TEXT.search(message))


class RetryPolicy:
    """How often to retry and how long to wait between tries.

    Args:
        max_retries: retries after the first try (0: never retry).
        backoff: the first wait in seconds, doubled each time, capped at 8 s.
    """

    def __init__(self, max_retries: int = 3, backoff: float = 0.5) -> None:
        self.max_retries = max(0, int(max_retries))
        self.backoff = backoff

    def should_retry(
        self,
        headers: Mapping[str, str],
        status: int,
        error_type: str | None,
        message: str,
        delay: float | None,
    ) -> bool:
        """Whether an error response is worth another try (``delay``: what the server asked)."""
        if delay is not None and delay > MAX_RETRY_WAIT_S:
            return False  # even with x-should-retry: true: no wait is longer than the cap
        should = should_retry_header(headers)
        if should is not None:
            return should
        if status not in RETRY_STATUSES and status < 500:
            return False
        if status == 429 and _quota_exhausted(error_type, message, delay is not None):
            return False
        return True

    def pause(self, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt + 1`` (with jitter)."""
        delay = min(self.backoff * 2.0**attempt, 8.0)
        return delay * (1.0 - 0.25 * random.random())
