"""The running run's deadline, visible to everything the run awaits.

The loop sets it when a run starts (a context variable, so each run and each
task it spawns sees its own); retries and tool timeouts read
:func:`remaining` so no wait outlives the run.
"""

from __future__ import annotations

import contextvars
import time

__all__ = ["context_with_deadline", "expired", "remaining", "set_deadline"]

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "nbagent_deadline", default=None
)


def set_deadline(seconds: float | None) -> contextvars.Token[float | None]:
    """Set the current context's deadline ``seconds`` from now (None: no deadline)."""
    return _DEADLINE.set(None if seconds is None else time.monotonic() + seconds)


def remaining() -> float | None:
    """Seconds left before the current run's deadline (None: no deadline; never below 0)."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return None
    return max(0.0, deadline - time.monotonic())


def expired() -> bool:
    """True once the current run's deadline has passed."""
    left = remaining()
    return left is not None and left <= 0.0


def context_with_deadline(seconds: float | None) -> contextvars.Context:
    """A copy of the current context whose deadline is ``seconds`` from now (for a run's task)."""
    context = contextvars.copy_context()
    context.run(set_deadline, seconds)
    return context
