"""What ``run_python``'s code prints, captured per thread, never at the process's cost.

Swapping ``sys.stdout``/``sys.stderr`` for the length of a call captured every
thread's prints into the model's text, and when the code ignored its interrupt and
kept running the swap was never undone: later prints vanished for the rest of the
process. Here the process's streams are replaced only by a :class:`ThreadRouter`
while at least one capture is open. It sends what the capturing thread writes to
that capture and everything else to the stream it replaced; when the last capture
closes, the original stream is put back. Code still running after its call gave
up keeps its own capture open, and nobody else's output goes there.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

__all__ = ["KEPT_CHARS", "CappedText", "ThreadRouter", "capture_output"]

KEPT_CHARS = 50_000
"""Captured characters kept per stream (half from the start, half from the end)."""


class CappedText:
    """A write-only text stream keeping the first and last characters of what it gets."""

    def __init__(self, limit: int = KEPT_CHARS) -> None:
        self.half = limit // 2
        self.head: list[str] = []
        self.head_size = 0
        self.tail: list[str] = []
        self.tail_size = 0
        self.total = 0

    def write(self, text: str) -> int:
        """Keep ``text`` (or the part of it that fits)."""
        text = str(text)
        self.total += len(text)
        room = self.half - self.head_size
        if room > 0:
            self.head.append(text[:room])
            self.head_size += min(room, len(text))
            text = text[room:]
        if text:
            self.tail.append(text[-self.half :])
            self.tail_size += min(len(text), self.half)
            if self.tail_size > 2 * self.half:
                joined = "".join(self.tail)[-self.half :]
                self.tail, self.tail_size = [joined], len(joined)
        return len(text)

    def flush(self) -> None:
        """Nothing to flush."""

    def isatty(self) -> bool:
        """Not a terminal."""
        return False

    def getvalue(self) -> str:
        """What was kept, with a marker for what was not."""
        head = "".join(self.head)
        tail = "".join(self.tail)[-self.half :] if self.tail else ""
        dropped = self.total - len(head) - len(tail)
        if dropped > 0:
            return f"{head}\n[… {dropped:,} characters not kept …]\n{tail}"
        return head + tail


class ThreadRouter:
    """Stands in for ``sys.stdout``/``sys.stderr`` while captures are open.

    Each capturing thread writes to its capture, every other thread to the stream
    this router replaced.
    """

    def __init__(self, original: TextIO) -> None:
        self.original = original
        self.targets: dict[int, CappedText] = {}

    def _stream(self) -> Any:
        return self.targets.get(threading.get_ident(), self.original)

    def write(self, text: str) -> int:
        """Write to this thread's capture, or to the original stream."""
        return int(self._stream().write(text) or 0)

    def flush(self) -> None:
        """Flush this thread's stream."""
        self._stream().flush()

    def isatty(self) -> bool:
        """Whether this thread's stream is a terminal."""
        return bool(self._stream().isatty())

    def __getattr__(self, name: str) -> Any:
        # encoding, fileno, buffer...: the original stream's (libraries ask for them).
        return getattr(self.original, name)


_lock = threading.Lock()
_routers: dict[str, ThreadRouter] = {}


def _open(name: str, capture: CappedText) -> tuple[ThreadRouter, CappedText | None]:
    current = getattr(sys, name)
    router = _routers.get(name)
    if router is None or current is not router:
        router = _routers[name] = ThreadRouter(current)
        setattr(sys, name, router)
    ident = threading.get_ident()
    previous = router.targets.get(ident)  # a run_python inside a run_python
    router.targets[ident] = capture
    return router, previous


def _close(name: str, router: ThreadRouter, previous: CappedText | None) -> None:
    ident = threading.get_ident()
    if previous is not None:
        router.targets[ident] = previous
    else:
        router.targets.pop(ident, None)
    if not router.targets and getattr(sys, name) is router:
        setattr(sys, name, router.original)  # the last capture: the stream as it was
        _routers.pop(name, None)


@contextmanager
def capture_output() -> Iterator[tuple[CappedText, CappedText]]:
    """Capture this thread's stdout and stderr until the block ends (whatever happens)."""
    out, err = CappedText(), CappedText()
    with _lock:
        opened = [
            (name, *_open(name, capture)) for name, capture in (("stdout", out), ("stderr", err))
        ]
    try:
        yield out, err
    finally:
        with _lock:
            for name, router, previous in opened:
                _close(name, router, previous)
