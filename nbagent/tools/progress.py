"""Progress from inside a tool: ``nbagent.progress("step 2 of 5", fraction=0.4)``.

The loop installs a reporter for each call it runs (see :mod:`.middleware`); a
tool, sync or async, on whatever thread, reports through it. Generator tools need
no call at all: each value they yield is a progress line.
Outside a tool run, :func:`progress` does nothing.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["CURRENT_REPORTER", "Reporter", "progress", "reporting"]

Reporter = Callable[[str, "float | None"], None]
"""``reporter(message, fraction)``: must be safe to call from any thread."""

CURRENT_REPORTER: contextvars.ContextVar[Reporter | None] = contextvars.ContextVar(
    "nbagent_progress", default=None
)


def progress(message: object, fraction: float | None = None) -> None:
    """Show ``message`` (and ``fraction`` done, 0 to 1) as a progress line of this call.

    Callable from any tool, sync or async; does nothing outside a tool run.
    """
    reporter = CURRENT_REPORTER.get()
    if reporter is None:
        return
    if fraction is not None:
        fraction = min(max(float(fraction), 0.0), 1.0)
    reporter(str(message), fraction)


@contextmanager
def reporting(reporter: Reporter | None) -> Iterator[None]:
    """Route :func:`progress` calls in this context to ``reporter``."""
    token = CURRENT_REPORTER.set(reporter)
    try:
        yield
    finally:
        CURRENT_REPORTER.reset(token)
