"""The guard a stdio MCP server runs under on POSIX: its process group ends with nbagent.

Run as a script (``python -I -S guard.py COMMAND ARGS...``; standard library only,
no nbagent import). The mcp SDK starts it as the leader of a new process group;
the guard starts the server in that group, handing it the pipes, and keeps none
of them itself, so the server's stdout ends exactly when the server (and any
helper holding it) does. Then it waits:

- the server exits: the guard ends what is left of the group (a helper the server
  started and left behind), then exits with the server's status;
- nbagent's process is gone (killed hard, so no ``atexit`` ran: a kernel restart
  after its grace period, the OOM killer): the guard ends the whole group, as the
  SDK would have: SIGTERM, then SIGKILL after :data:`GRACE_S`. Helpers a server
  started (``npx``/``uvx`` launchers) are in the group and end with it.

A closing SDK signals the group itself (TERM, then KILL). The guard ignores the
TERM, so a server that ignores it too is still ended when nbagent's process exits
before its KILL is sent (a kernel exiting within its shutdown grace period).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

GRACE_S = 2.0
"""Seconds between SIGTERM and SIGKILL (the mcp SDK's own grace period)."""
POLL_S = 0.2
"""How often the guard checks that nbagent's process is still there."""


def end_group(grace: float = GRACE_S) -> None:
    """TERM the guard's process group, then KILL what is left after ``grace`` seconds."""
    group = os.getpgrp()
    try:
        os.killpg(group, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if _others_alive(group) is False:
            return
        time.sleep(0.02)
    os.killpg(group, signal.SIGKILL)  # the guard too: it has nothing left to do


def _others_alive(group: int) -> bool | None:
    """Whether a process of ``group`` other than the guard is still running.

    Read from ``/proc`` (Linux); None where it cannot be told.
    """
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    me = os.getpid()
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        # fields[0] is the state, fields[2] the process group.
        if int(fields[2]) == group and fields[0] != b"Z":
            return True
    return False


def main(argv: list[str]) -> int:
    """Start ``argv`` as the server and watch nbagent's process; returns the exit status."""
    parent = os.getppid()
    try:
        server = subprocess.Popen(argv)
    except OSError as exc:
        print(f"cannot start {argv[0]!r}: {exc.strerror or exc}", file=sys.stderr, flush=True)
        return 127
    # Hand the pipes over entirely: stdout must end when the server's does.
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    # Set after the start, so the server keeps the default actions. The guard outlives a
    # TERM sent to the group: if nbagent is gone before it sends the KILL, the guard does.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        try:
            status = server.wait(timeout=POLL_S)
        except subprocess.TimeoutExpired:
            if os.getppid() != parent:
                end_group()
                return 1
            continue
        left = _others_alive(os.getpgrp())
        if left:
            end_group()
        elif left is None:  # cannot tell: ask them to go; the closing SDK kills the rest
            os.killpg(os.getpgrp(), signal.SIGTERM)
        return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
