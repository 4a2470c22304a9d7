"""MCP servers across kernel restarts: a server that ignores stdin EOF and SIGTERM, and the
helper process it started, end with the kernel (a real ipykernel, real child processes)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from tests.support.kernel import Kernel, kernel_environment

RAW = str(Path(__file__).resolve().parents[1] / "ecosystem" / "servers" / "raw_mcp.py")


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def gone_within(pids: list[int], seconds: float) -> list[int]:
    """The pids still running after waiting up to ``seconds`` for them to end."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(running(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if running(p)]


@pytest.mark.kernel
@pytest.mark.parametrize("now", [False, True], ids=["restart", "restart-now"])
def test_a_stubborn_server_and_its_helper_end_with_a_kernel_restart(tmp_path: Path, now: bool):
    kernel = Kernel(kernel_environment(tmp_path / "home"), tmp_path)
    pids: list[int] = []
    try:
        kernel.run(f"%load_ext nbagent\n%agent mcp add stub -- {sys.executable} {RAW} --stubborn")
        printed = kernel.run(
            "from nbagent.mcp import KERNEL_SERVERS\n"
            "from nbagent._internal.threads import run_in_background\n"
            "stub = KERNEL_SERVERS['stub']\n"
            "print(run_in_background(lambda: stub.call('pid', {})))\n"
            "print(run_in_background(lambda: stub.call('helper_pid', {})))"
        )
        pids = [int(line) for line in printed.split()]
        assert len(pids) == 2 and all(running(p) for p in pids)
        assert os.getpgid(pids[0]) == os.getpgid(pids[1])
        # now=False: shutdown_request, atexit closes the server; now=True: SIGKILL, no atexit.
        kernel.km.restart_kernel(now=now)
        assert gone_within(pids, 30) == [], "an MCP process survived the kernel restart"
    finally:
        kernel.close()
        for pid in pids:
            if running(pid):
                os.kill(pid, 9)
