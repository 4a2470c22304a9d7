"""The one throttle: at most one redraw every ``interval`` seconds, never losing the last.

However fast tokens arrive, a display is redrawn at most ~10 times a second
(:data:`UPDATE_INTERVAL`); a change held back is sent at the next poll after the
interval (the live driver polls at least once per interval while the run is idle),
and the final state is always sent, whatever the throttle held back.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["UPDATE_INTERVAL", "Throttle"]

UPDATE_INTERVAL = 0.1
"""Seconds between live display updates (at most ~10 a second, however fast tokens come)."""


class Throttle:
    """Calls ``send`` when something changed and ``interval`` seconds passed since the last send.

    ``interval=0`` sends after every change (for surfaces that append, such as a terminal).
    """

    def __init__(self, send: Callable[[], None], interval: float = UPDATE_INTERVAL) -> None:
        self.send = send
        self.interval = interval
        self.updates = 0
        """Updates sent so far (for tests and benchmarks)."""
        self.dirty = False
        self._last = 0.0

    def changed(self) -> None:
        """Something visible changed: the next :meth:`poll` after the interval sends it."""
        self.dirty = True

    def poll(self, *, force: bool = False) -> bool:
        """Send if due (or ``force``); True when an update was sent."""
        if not force and (not self.dirty or time.monotonic() - self._last < self.interval):
            return False
        self.send()
        self.updates += 1
        self._last = time.monotonic()  # from the send, so sends are >= interval apart
        self.dirty = False
        return True
