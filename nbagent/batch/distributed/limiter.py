"""The cluster-wide limiter: one place that every worker's requests ask before they go.

:class:`SharedLimiter` holds the batch's ``rpm``/``tpm`` windows (the same
:class:`~nbagent.batch.limits.RequestRate` a single machine uses) and the 429 pause:
a ``retry-after`` seen by any worker holds back every worker's next request. It
lives in exactly one process, hosted by the engine's own primitive (a Ray actor,
a Dask scheduler plugin), so the limit is the user's number, not one copy of it per
worker.

On each worker, :class:`LimiterHooks` are the ``httpx`` event hooks of the agent's
client: before a request, ask the limiter (one round trip); after a 429, tell it.
The driver reads :meth:`SharedLimiter.state` to back its concurrency off (AIMD).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from ...providers.http.retry import retry_after
from ..limits import BODY_BYTES_PER_TOKEN, RequestRate

__all__ = ["LimiterCalls", "LimiterClosed", "LimiterHooks", "LimiterState", "SharedLimiter"]


@dataclass(frozen=True)
class LimiterState:
    """What the driver reads from the limiter."""

    throttled: int
    """429 answers reported so far."""
    last_wait: float | None
    """The last 429's retry-after in seconds (None: it had none)."""


class SharedLimiter:
    """The limits of one batch, for all its workers (see the module docstring).

    Args:
        rpm: requests per minute for the whole cluster (None: no limit).
        tpm: tokens per minute (request bytes / 4, as on one machine).
    """

    def __init__(self, rpm: float | None = None, tpm: float | None = None) -> None:
        self.rate = RequestRate(rpm, tpm)
        self.throttled = 0
        self.last_wait: float | None = None
        self._paused_until = 0.0
        self._closed = asyncio.Event()

    async def admit(self, tokens: int) -> None:
        """Return when one request of ``tokens`` tokens may be sent (pause, then windows).

        Raises:
            LimiterClosed: the batch ended while the request waited.
        """
        if self._closed.is_set():
            raise LimiterClosed("the batch has ended")
        if not self.rate.active and self._paused_until <= time.monotonic():
            return  # the common case: nothing to wait for
        waiting = asyncio.ensure_future(self._wait_turn(tokens))
        closed = asyncio.ensure_future(self._closed.wait())
        try:
            await asyncio.wait({waiting, closed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            closed.cancel()
            if not waiting.done():
                waiting.cancel()
        if not waiting.done() or waiting.cancelled():
            raise LimiterClosed("the batch has ended")
        waiting.result()

    async def _wait_turn(self, tokens: int) -> None:
        pause = self._paused_until - time.monotonic()
        while pause > 0:
            await asyncio.sleep(pause)
            pause = self._paused_until - time.monotonic()
        await self.rate.admit(tokens)

    def close(self) -> None:
        """The batch ended (or stopped): requests still waiting fail now, not in a minute.

        A stopped batch's rows may be blocked in a worker's thread on their wait.
        """
        self._closed.set()

    def throttle(self, wait: float | None) -> None:
        """A worker got a 429: every worker waits ``wait`` seconds (1 s when not given)."""
        self.throttled += 1
        self.last_wait = wait
        pause = 1.0 if wait is None else wait
        self._paused_until = max(self._paused_until, time.monotonic() + pause)

    def state(self) -> LimiterState:
        """Counts for the driver."""
        return LimiterState(self.throttled, self.last_wait)


class LimiterClosed(Exception):
    """A request asked a limiter whose batch has ended (stopped): the row ends too."""


class LimiterCalls(Protocol):
    """How a worker reaches the one :class:`SharedLimiter` (an actor call, an RPC)."""

    async def admit(self, tokens: int) -> None:
        """:meth:`SharedLimiter.admit`, remotely."""
        ...

    async def throttle(self, wait: float | None) -> None:
        """:meth:`SharedLimiter.throttle`, remotely."""
        ...


class LimiterHooks:
    """``httpx`` event hooks asking the shared limiter before every request of a worker."""

    def __init__(self, limiter: LimiterCalls) -> None:
        self.limiter = limiter

    def hooks(self) -> dict[str, list[Callable[..., Any]]]:
        """``event_hooks=`` for an ``httpx.AsyncClient``."""
        return {"request": [self.before_request], "response": [self.after_response]}

    async def before_request(self, request: httpx.Request) -> None:
        """Wait until the cluster's limits let this request go."""
        size = len(request.content) if request.content else 0
        await self.limiter.admit(max(1, size // BODY_BYTES_PER_TOKEN))

    async def after_response(self, response: httpx.Response) -> None:
        """Report a 429 (with its retry-after) so every worker pauses."""
        if response.status_code == 429:
            await self.limiter.throttle(retry_after(response.headers))
