"""MCP tools: server start time and per-call overhead against a direct Python call.

Run: ``python benchmarks/bench_mcp.py [--calls 300]``

The server is the test suite's demo server (``tests/ecosystem/servers/demo_mcp.py``,
written with the mcp SDK's MCPServer), a stdio child process. Measured, per call
of ``add(a, b)``:

* ``direct``: the Python function itself;
* ``@tool round``: nbagent's ``execute_round`` running a plain ``@tool`` (thread hand-off);
* ``sdk``: the mcp SDK's own ``ClientSession.call_tool`` on a session we hold (the protocol
  floor: JSON-RPC over pipes to another process);
* ``MCPTool round``: ``execute_round`` running the MCP tool (nbagent's whole path, on
  nbagent's loop, where the session lives);
* ``MCPTool, other loop``: the same from another event loop (Jupyter's ``await agent.run``),
  which adds the hand-over between threads.

Start time: ``MCPServer.stdio(...).get_tools()`` (spawn, initialize, list tools),
against starting a Python process that only imports the SDK's server module.
Goal: overhead under 5 ms per call after start.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

from nbagent._internal.threads import run_in_background  # noqa: E402
from nbagent.mcp import MCPServer  # noqa: E402
from nbagent.messages import ToolCall  # noqa: E402
from nbagent.tools import Tool, execute_round  # noqa: E402

DEMO = str(Path(__file__).resolve().parents[1] / "tests" / "ecosystem" / "servers" / "demo_mcp.py")


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def per_call(seconds: float, calls: int) -> float:
    return seconds / calls * 1000


async def rounds(tool: Tool, calls: int) -> float:
    tools = {tool.name: tool}
    started = time.perf_counter()
    for i in range(calls):
        call = ToolCall(f"c{i}", tool.name, {"a": i, "b": 1})
        (result,) = await execute_round([call], tools)
        assert result.ok, result.error
    return time.perf_counter() - started


async def sdk_calls(calls: int) -> float:
    params = StdioServerParameters(command=sys.executable, args=[DEMO])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.call_tool("add", {"a": 0, "b": 0})
        started = time.perf_counter()
        for i in range(calls):
            await session.call_tool("add", {"a": i, "b": 1})
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--starts", type=int, default=3)
    n = parser.parse_args().calls
    starts = parser.parse_args().starts

    import_only = []
    for _ in range(starts):
        began = time.perf_counter()
        code = "import mcp.server.mcpserver"
        subprocess.run([sys.executable, "-c", code], check=True)
        import_only.append(time.perf_counter() - began)
    start_times = []
    for _ in range(starts):
        server = MCPServer.stdio(sys.executable, [DEMO])
        began = time.perf_counter()
        tools = {t.name: t for t in server.get_tools()}
        start_times.append(time.perf_counter() - began)
        server.close()

    began = time.perf_counter()
    for i in range(n):
        add(i, 1)
    direct = per_call(time.perf_counter() - began, n)
    plain = per_call(run_in_background(lambda: rounds(Tool(add), n)), n)
    sdk = per_call(asyncio.run(sdk_calls(n)), n)
    server = MCPServer.stdio(sys.executable, [DEMO])
    tools = {t.name: t for t in server.get_tools()}
    run_in_background(lambda: rounds(tools["add"], 10))  # warm up
    mcp_round = per_call(run_in_background(lambda: rounds(tools["add"], n)), n)
    other_loop = per_call(asyncio.run(rounds(tools["add"], n)), n)
    server.close()

    print(f"server start (spawn + initialize + list 7 tools), median of {starts}: "
          f"{statistics.median(start_times) * 1000:.0f} ms "
          f"(a Python process importing the SDK's server only: "
          f"{statistics.median(import_only) * 1000:.0f} ms)")  # fmt: skip
    print(f"{'path':<22}{'ms/call':>10}{'overhead vs direct':>22}")
    for name, value in [
        ("direct", direct),
        ("@tool round", plain),
        ("sdk call_tool", sdk),
        ("MCPTool round", mcp_round),
        ("MCPTool, other loop", other_loop),
    ]:
        print(f"{name:<22}{value:>10.3f}{value - direct:>22.3f}")
    print(f"nbagent's own share of an MCP call: {mcp_round - sdk:+.3f} ms over the SDK's call")
    verdict = "met" if mcp_round - direct < 5 else "NOT met"
    print(f"goal (overhead under 5 ms per call after start): {verdict}")


if __name__ == "__main__":
    main()
