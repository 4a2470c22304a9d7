"""Soak: thousands of runs in one process, history on. Does anything grow?

Run: ``python benchmarks/soak.py [--runs 2000] [--every 10] [--full]``

``--full`` adds the kernel tools (``list_variables`` and ``inspect_variable`` on this
process's variables) and a tool of a real MCP server over stdio (the tests' demo
server's ``add``, as ``mcp_add``) to every run's round.

Each run is one tool round and an answer: a ScriptedModel asks for ``add(a, b)``
(a sync tool) and ``twice(x)`` (an async tool), then answers. Every
``--every`` runs the agent starts a new conversation (so the per-run work stays
the same) while the history database keeps growing, as in a long session.

Reported, for the first and the last window of runs: resident memory (RSS),
threads, open file descriptors, and the median time per run. A leak shows as
RSS, threads or descriptors that keep climbing, or runs that get slower.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def snapshot() -> dict[str, float]:
    return {"rss_mb": rss_mb(), "threads": threading.active_count(), "fds": open_fds()}


def build_agent(full: bool = False) -> Any:
    from nbagent import Agent, tool
    from nbagent.testing import ScriptedModel, call, reply

    @tool(register=False)
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @tool(register=False)
    async def twice(x: int) -> int:
        """Double a number."""
        await asyncio.sleep(0)
        return 2 * x

    tools: list[Any] = [add, twice]
    if full:
        from nbagent.mcp import MCPServer

        demo = ROOT / "tests" / "ecosystem" / "servers" / "demo_mcp.py"
        tools.append(MCPServer.stdio(sys.executable, [str(demo)], allow=["add"], prefix="mcp"))

    def round_calls() -> list[Any]:
        calls = [call("add", a=2, b=3), call("twice", x=4)]
        if full:
            calls += [
                call("mcp_add", a=1, b=2),
                call("list_variables"),
                call("inspect_variable", name="SOAK_FRAME"),
            ]
        return calls

    def script(request: Any) -> Any:
        if not request.tool_results:
            return reply(calls=round_calls())
        failed = [r.content for r in request.tool_results if not r.ok]
        assert not failed, failed
        return "The sum is 5 and twice 4 is 8."

    return Agent(ScriptedModel(script), tools=tools, kernel=full)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--every", type=int, default=10, help="runs per conversation")
    parser.add_argument("--window", type=int, default=100, help="runs per reported window")
    parser.add_argument("--full", action="store_true", help="kernel tools and an MCP tool too")
    args = parser.parse_args()

    home = tempfile.mkdtemp(prefix="nbagent-soak-")
    os.environ["NBAGENT_HOME"] = home  # history on, in a folder of its own
    if args.full:
        import pandas as pd

        globals()["SOAK_FRAME"] = pd.DataFrame({"x": range(100), "y": range(100)})
    agent = build_agent(args.full)
    times: list[float] = []
    agent.run_sync("warm up")
    agent.reset()
    first = snapshot()
    marks = [(0, first)]
    began = time.perf_counter()
    for n in range(args.runs):
        started = time.perf_counter()
        result = agent.run_sync(f"run {n}: what is 2 + 3?")
        times.append(time.perf_counter() - started)
        assert result.stop_reason == "complete", result.output
        if (n + 1) % args.every == 0:
            agent.reset()
            # ScriptedModel keeps every request it got (tests read them): not a leak of
            # nbagent's, so it is emptied here with each new conversation.
            agent.provider.requests.clear()
        if (n + 1) % (args.runs // 4 or 1) == 0:
            marks.append((n + 1, snapshot()))
    total = time.perf_counter() - began
    db = sum(p.stat().st_size for p in Path(home).rglob("*") if p.is_file())
    what = (
        "a sync, an async, an MCP and two kernel tools" if args.full else "a sync and an async tool"
    )
    print(f"{args.runs} runs (ScriptedModel, {what} per run), "
          f"history on ({db / 1e6:.1f} MB written), {total:.1f} s")  # fmt: skip
    print(f"{'after run':>9} {'RSS MB':>8} {'threads':>8} {'fds':>5}")
    for n, mark in marks:
        print(f"{n:>9} {mark['rss_mb']:>8.1f} {mark['threads']:>8.0f} {mark['fds']:>5.0f}")
    head = statistics.median(times[: args.window]) * 1000
    tail = statistics.median(times[-args.window :]) * 1000
    print(f"per run, median: first {args.window} runs {head:.2f} ms, "
          f"last {args.window} runs {tail:.2f} ms ({tail / head:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
