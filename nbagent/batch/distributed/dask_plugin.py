"""The cluster's limiters on the Dask scheduler: a scheduler plugin with its own handlers.

Dask's own cluster-wide primitives (``Semaphore``, ``Variable``, ``Event``) are
scheduler extensions that add handlers to ``scheduler.handlers``; this plugin adds
the limiter's (``nbagent_limiter_*``) the same way. The state lives on the scheduler,
so it survives any worker's death; workers and the driver call the handlers over
Dask's own RPC. Imported only when ``executor="dask"`` runs (it needs distributed).
"""

from __future__ import annotations

from typing import Any

from distributed.diagnostics.plugin import SchedulerPlugin

from .limiter import LimiterClosed, SharedLimiter

__all__ = ["LimiterPlugin"]

PLUGIN_NAME = "nbagent-limiters"


class LimiterPlugin(SchedulerPlugin):
    """One :class:`~.limiter.SharedLimiter` per running batch, by name."""

    name = PLUGIN_NAME
    idempotent = True
    """Registered once per scheduler: a second batch keeps the limiters of the first."""

    def __init__(self) -> None:
        self.limiters: dict[str, SharedLimiter] = {}

    async def start(self, scheduler: Any) -> None:
        """Add the limiter's handlers to the scheduler's RPC."""
        scheduler.handlers.update(
            {
                "nbagent_limiter_open": self.open_limiter,
                "nbagent_limiter_admit": self.admit,
                "nbagent_limiter_throttle": self.throttle,
                "nbagent_limiter_state": self.limiter_state,
                "nbagent_limiter_close": self.close_limiter,
            }
        )

    def open_limiter(self, name: str, rpm: float | None, tpm: float | None) -> None:
        """A batch starts: its limiter."""
        self.limiters[name] = SharedLimiter(rpm, tpm)

    async def admit(self, name: str, tokens: int) -> None:
        """Return when a worker's request may go."""
        limiter = self.limiters.get(name)
        if limiter is None:
            # The batch ended (stopped): a task that started after it must not send.
            # Cancelling a queued Dask task races with a free worker thread taking it.
            raise LimiterClosed("the batch has ended")
        await limiter.admit(tokens)

    def throttle(self, name: str, wait: float | None) -> None:
        """A worker got a 429."""
        limiter = self.limiters.get(name)
        if limiter is not None:
            limiter.throttle(wait)

    def limiter_state(self, name: str) -> tuple[int, float | None]:
        """(429s reported, the last one's retry-after) for the driver."""
        limiter = self.limiters.get(name)
        if limiter is None:
            return (0, None)
        state = limiter.state()
        return (state.throttled, state.last_wait)  # msgpack-able

    def close_limiter(self, name: str) -> None:
        """The batch ended: forget its limiter."""
        limiter = self.limiters.pop(name, None)
        if limiter is not None:
            limiter.close()
