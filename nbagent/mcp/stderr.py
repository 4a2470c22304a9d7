"""A stdio server's stderr: read into the log and a short memory, never into a cell.

A server's stderr is where its cause of failure goes: the mcp SDK's server API
sends clients only "Error executing tool NAME" for an unexpected exception and
writes the traceback to stderr; a server that cannot start says why there. So
the child's stderr is a pipe read by a daemon thread: each line goes to the
``nbagent`` logger (INFO, redacted by its filter; ``NBAGENT_LOG=info`` shows it)
and to a bounded memory from which a failed call or a failed start takes the
lines written meanwhile.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import sys
import threading
import time
from typing import TextIO

from .._internal.redaction import scrub
from .._internal.safe_text import one_line

logger = logging.getLogger("nbagent")

KEPT_LINES = 200
"""Lines of a server's stderr kept in memory (older ones are only in the log)."""
ATTACHED_LINES = 20
"""At most this many stderr lines are attached to an error (the last ones)."""
LINE_CHARS = 500
"""A longer stderr line is cut to this many characters."""
QUIET_S = 0.05
"""A failed call waits until the server's stderr has been quiet this long..."""
SETTLE_S = 0.5
"""...but never longer than this: the traceback is written as the error is sent."""


class StderrLines:
    """The stderr of one server process: a pipe, a reader thread, the lines seen so far."""

    def __init__(self, server: str) -> None:
        self.server = server
        self._lines: collections.deque[tuple[int, str]] = collections.deque(maxlen=KEPT_LINES)
        self._count = 0
        self._last = 0.0
        self._lock = threading.Lock()
        self._write: TextIO | None = None
        self._read_fd = -1

    def open(self) -> TextIO:
        """A new pipe for a starting process: returns the end to give the child as stderr."""
        self.close_writer()
        read_fd, write_fd = os.pipe()
        self._write = os.fdopen(write_fd, "w")
        self._read_fd = read_fd
        reader = threading.Thread(
            target=self._read, args=(read_fd,), name=f"nbagent-mcp-stderr-{self.server}",
            daemon=True,
        )  # fmt: skip
        reader.start()
        return self._write

    def close_writer(self) -> None:
        """Close nbagent's copy of the pipe's write end (the child keeps its own).

        Called once the child is started (or failed to start), so the reader sees the
        end of the stream when the last process holding it exits.
        """
        if self._write is not None:
            with contextlib.suppress(OSError):
                self._write.close()
            self._write = None

    @property
    def mark(self) -> int:
        """How many lines were read so far: give it to :meth:`since` later."""
        with self._lock:
            return self._count

    def since(self, mark: int) -> list[str]:
        """The lines read after ``mark`` (the last :data:`ATTACHED_LINES` of them)."""
        with self._lock:
            lines = [line for number, line in self._lines if number >= mark]
        return lines[-ATTACHED_LINES:]

    async def settled_since(self, mark: int) -> list[str]:
        """:meth:`since`, after waiting (briefly) for the server to finish writing."""
        began = time.monotonic()
        deadline = began + SETTLE_S
        while (now := time.monotonic()) < deadline and (
            now - max(self._last, began) < QUIET_S or _unread(self._read_fd)
        ):
            await asyncio.sleep(QUIET_S / 4)
        return self.since(mark)

    def _read(self, fd: int) -> None:
        # os.read, not a buffered file: bytes leave the pipe only as they become lines
        # here, so settled_since can tell from the pipe that lines are still coming.
        pending = b""
        try:
            while chunk := os.read(fd, 65536):
                *lines, pending = (pending + chunk).split(b"\n")
                for raw in lines:
                    self._add(raw)
                if len(pending) > LINE_CHARS * 100:  # no newline coming: keep memory bounded
                    self._add(pending)
                    pending = b""
            if pending:
                self._add(pending)
        except OSError:
            pass
        finally:
            if self._read_fd == fd:
                self._read_fd = -1  # the number may be reused once closed
            os.close(fd)

    def _add(self, raw: bytes) -> None:
        line = one_line(scrub(raw.decode("utf-8", "replace").rstrip("\r")))
        if len(line) > LINE_CHARS:
            line = line[:LINE_CHARS] + "…"
        with self._lock:
            self._lines.append((self._count, line))
            self._count += 1
            self._last = time.monotonic()
        logger.info("MCP server %s stderr: %s", self.server, line)


def _unread(fd: int) -> bool:
    """Whether the pipe ``fd`` holds bytes not read yet (False where that cannot be asked)."""
    if fd < 0:
        return False
    try:
        import fcntl
        import termios

        size = bytearray(4)
        fcntl.ioctl(fd, termios.FIONREAD, size)
    except (ImportError, OSError):
        return False
    return int.from_bytes(size, sys.byteorder) > 0


def with_stderr(message: str, lines: list[str]) -> str:
    """``message`` followed by the server's stderr lines, when there are any."""
    if not lines:
        return message
    return message + "\nThe server wrote on stderr:\n" + "\n".join(lines)
