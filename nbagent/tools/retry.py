"""Tool retries: ``@tool(retries=3, retry_on=(ConnectionError, TimeoutError))``.

A failing attempt whose exception is one of ``retry_on`` is tried again after an
exponential backoff with full jitter (``backoff * 2**n``, a random fraction of it
kept, capped at :data:`MAX_WAIT`), at most ``retries`` times; every retry is a
progress line of the call ("attempt 1 failed (ConnectionError: ...); retrying in
0.4 s"). Then the last error is reported as usual. Default: no retry. The tool's
timeout covers all attempts together.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

from .progress import progress

__all__ = ["MAX_WAIT", "retry_wait", "retrying", "retrying_async"]

MAX_WAIT = 8.0
"""The longest wait between two attempts, in seconds."""


def retry_wait(attempt: int, backoff: float) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based), with jitter."""
    ceiling = min(backoff * 2.0 ** (attempt - 1), MAX_WAIT)
    return ceiling * (0.5 + random.random() / 2)


def _announce(attempt: int, total: int, exc: BaseException, wait: float) -> None:
    progress(
        f"attempt {attempt} of {total} failed ({type(exc).__name__}: {exc}); "
        f"retrying in {wait:.1f} s"
    )


def retrying(
    fn: Callable[[], Any], retries: int, retry_on: tuple[type[BaseException], ...], backoff: float
) -> Any:
    """``fn()`` with up to ``retries`` retries on ``retry_on`` (sleeps: call it off the loop)."""
    attempt = 1
    while True:
        try:
            return fn()
        except retry_on as exc:
            if attempt > retries:
                raise
            wait = retry_wait(attempt, backoff)
            _announce(attempt, retries + 1, exc, wait)
            time.sleep(wait)
            attempt += 1


async def retrying_async(
    fn: Callable[[], Awaitable[Any]],
    retries: int,
    retry_on: tuple[type[BaseException], ...],
    backoff: float,
) -> Any:
    """The async twin of :func:`retrying`."""
    attempt = 1
    while True:
        try:
            return await fn()
        except retry_on as exc:
            if attempt > retries:
                raise
            wait = retry_wait(attempt, backoff)
            _announce(attempt, retries + 1, exc, wait)
            await asyncio.sleep(wait)
            attempt += 1
