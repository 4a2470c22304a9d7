"""Concurrency and rate limits of a batch, shared by all its rows.

- :class:`AdaptiveConcurrency`: at most ``ceiling`` rows in flight; a 429 halves
  the limit (at most once per back-off window), each success adds ``1/limit``
  (additive increase, multiplicative decrease), and every request waits out the
  server's ``retry-after`` before it is sent.
- :class:`RequestRate`: optional ``rpm`` / ``tpm`` limits as sliding one-minute
  windows (tokens counted as request characters / 4 when sent).

:class:`HttpLimits` wires both into an ``httpx`` client as event hooks, so they
hold per HTTP request (the provider's own retries included) while the rows'
runs know nothing about them.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable

import httpx

from ..providers.http.retry import retry_after

__all__ = ["AdaptiveConcurrency", "HttpLimits", "RequestRate"]

BODY_BYTES_PER_TOKEN = 4
"""A request body's tokens for the tpm window, before the reply says: bytes / 4 (JSON
keys and quotes make a body larger than its text)."""

Clock = Callable[[], float]


class AdaptiveConcurrency:
    """The number of rows allowed in flight, backing off on 429s (AIMD).

    Args:
        ceiling: the user's ``concurrency``; the limit never goes above it.
        clock: monotonic seconds (tests and benchmarks may inject one).
    """

    def __init__(self, ceiling: int, *, clock: Clock = time.monotonic) -> None:
        self.ceiling = max(1, int(ceiling))
        self.limit = float(self.ceiling)
        self.throttled = 0
        """429 responses seen so far."""
        self._clock = clock
        self._paused_until = 0.0
        self._last_cut = -1e9

    @property
    def capacity(self) -> int:
        """Rows that may be in flight now (at least 1)."""
        return max(1, int(self.limit))

    def succeeded(self) -> None:
        """A request got an answer: grow by one row per ``limit`` successes."""
        if self.limit < self.ceiling:
            self.limit = min(float(self.ceiling), self.limit + 1.0 / self.limit)

    def throttle(self, wait: float | None) -> None:
        """A 429 arrived (``wait``: the server's retry-after in seconds, if any)."""
        self.throttled += 1
        now = self._clock()
        pause = 1.0 if wait is None else wait
        self._paused_until = max(self._paused_until, now + pause)
        # One cut per window: the 429s of the requests already in flight describe the
        # same overload, and halving once per response would collapse to 1 at once.
        if now - self._last_cut >= max(pause, 1.0):
            self.limit = max(1.0, self.limit / 2.0)
            self._last_cut = now

    def pause_left(self) -> float:
        """Seconds every request still waits because of the last retry-after."""
        return max(0.0, self._paused_until - self._clock())


class RequestRate:
    """Requests and tokens per minute, as sliding one-minute windows."""

    WINDOW = 60.0

    def __init__(
        self, rpm: float | None = None, tpm: float | None = None, *, clock: Clock = time.monotonic
    ) -> None:
        self.rpm = rpm
        self.tpm = tpm
        self._clock = clock
        self._sent: collections.deque[tuple[float, int]] = collections.deque()
        self._tokens = 0
        self._lock = asyncio.Lock()

    @property
    def active(self) -> bool:
        """Whether any limit is set."""
        return self.rpm is not None or self.tpm is not None

    async def admit(self, tokens: int) -> None:
        """Wait until one more request of ``tokens`` tokens fits in the last minute."""
        if not self.active:
            return
        async with self._lock:  # one waiter at a time keeps the order fair
            while True:
                wait = self._wait(tokens)
                if wait <= 0:
                    self._sent.append((self._clock(), tokens))
                    self._tokens += tokens
                    return
                await asyncio.sleep(wait)

    def _wait(self, tokens: int) -> float:
        now = self._clock()
        while self._sent and now - self._sent[0][0] >= self.WINDOW:
            self._tokens -= self._sent.popleft()[1]
        if not self._sent:
            return 0.0
        oldest = self._sent[0][0] + self.WINDOW - now
        if self.rpm is not None and len(self._sent) + 1 > self.rpm:
            return oldest
        # A request bigger than the whole budget goes alone rather than never.
        if self.tpm is not None and self._tokens + tokens > self.tpm:
            return oldest
        return 0.0


class HttpLimits:
    """Both limits as ``httpx`` event hooks: requests wait, 429s shrink the concurrency."""

    def __init__(self, concurrency: AdaptiveConcurrency, rate: RequestRate) -> None:
        self.concurrency = concurrency
        self.rate = rate

    def hooks(self) -> dict[str, list[Callable[..., object]]]:
        """``event_hooks=`` for an ``httpx.AsyncClient``."""
        return {"request": [self.before_request], "response": [self.after_response]}

    async def before_request(self, request: httpx.Request) -> None:
        """Wait out a retry-after, then the rpm/tpm windows."""
        pause = self.concurrency.pause_left()
        while pause > 0:
            await asyncio.sleep(pause)
            pause = self.concurrency.pause_left()
        size = len(request.content) if request.content else 0
        await self.rate.admit(max(1, size // BODY_BYTES_PER_TOKEN))

    async def after_response(self, response: httpx.Response) -> None:
        """Count the answer or the 429 (with its retry-after)."""
        if response.status_code == 429:
            self.concurrency.throttle(retry_after(response.headers))
        elif response.status_code < 400:
            self.concurrency.succeeded()
