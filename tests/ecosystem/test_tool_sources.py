"""Tool sources side by side: a real MCP server (the SDK's server API, a stdio child)
offering ``run_python`` next to the kernel tools is refused, never a silent
replacement of the kernel's ``run_python`` and its approval; through the Agent, the
``mcpServers`` loading and ``%agent mcp add`` in a real kernel."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import nbagent
from nbagent import Agent, ConfigError
from nbagent.mcp import KERNEL_SERVERS, MCPServer, load_config, servers_from_config
from nbagent.testing import ScriptedModel, call, reply
from tests.support.kernel import Kernel, printed
from tests.support.registry import empty_registry

DEMO = str(Path(__file__).parent / "servers" / "demo_mcp.py")


def shadow(**options) -> MCPServer:
    """The demo server with a ``run_python`` tool of its own (which asks no approval)."""
    options.setdefault("name", "shadow")
    return MCPServer.stdio(sys.executable, [DEMO, "--run-python"], timeout=20, **options)


def recorded() -> ScriptedModel:
    return ScriptedModel(lambda request: reply("done"))


def test_an_mcp_run_python_next_to_kernel_true_is_refused_when_the_agent_is_built():
    server = shadow()
    try:
        with pytest.raises(ConfigError) as refused:
            Agent(recorded(), tools=[server], kernel=True, store=None)
        text = str(refused.value)
        assert "'run_python'" in text
        assert "the kernel tools" in text and "MCP server 'shadow'" in text
        assert "prefix" in text  # and how to fix it
    finally:
        server.close()


def test_kernel_for_one_run_is_refused_before_the_first_request():
    server = shadow()
    model = recorded()
    agent = Agent(model, tools=[server], store=None)
    try:
        with pytest.raises(ConfigError, match="the kernel tools and by MCP server 'shadow'"):
            agent.run_sync("go", kernel=True)
        assert model.requests == []  # nothing was sent
        assert agent.run_sync("go").output == "done"  # without the kernel tools it runs
    finally:
        agent.close()


def test_with_a_prefix_both_are_offered_and_the_kernels_still_asks_approval():
    asked: list[str] = []

    def approver(tool_call, tool):
        asked.append(tool_call.name)
        return False

    def script(request):
        if not request.tool_results:
            return reply(calls=[call("run_python", code="1 + 1")])
        return reply("done")

    model = ScriptedModel(script)
    namespace: dict[str, object] = {}
    from nbagent.kernel import KernelTools

    kernel = KernelTools(namespace=namespace)
    server = shadow(prefix="remote")
    agent = Agent(model, tools=[server, kernel], store=None, approver=approver)
    try:
        result = agent.run_sync("go")
        offered = {spec.name for spec in model.requests[0].tool_specs}
        assert {"run_python", "remote_run_python", "remote_add"} <= offered
        assert asked == ["run_python"]  # the kernel's run_python, with its approval
        assert not result.rounds[0].results[0].ok
        assert "You work inside the user's Jupyter kernel" in (
            model.requests[0].request.system or ""
        )
    finally:
        agent.close()


def test_two_servers_offering_one_name_are_refused_and_a_prefix_resolves_it():
    first = MCPServer.stdio(sys.executable, [DEMO], name="one", allow=["add"], timeout=20)
    second = MCPServer.stdio(sys.executable, [DEMO], name="two", allow=["add"], timeout=20)
    try:
        with pytest.raises(ConfigError, match="'add' is offered by MCP server 'one' and by MCP"):
            Agent(recorded(), tools=[first, second], store=None)
        second.close()
        second = MCPServer.stdio(
            sys.executable, [DEMO], name="two", allow=["add"], prefix="two", timeout=20
        )
        agent = Agent(recorded(), tools=[first, second], store=None)
        assert sorted(agent.tools) == ["add", "two_add"]
    finally:
        first.close()
        second.close()


def test_your_own_tool_replaces_a_source_tool_only_when_it_asks_approval_too():
    server = MCPServer.stdio(
        sys.executable, [DEMO], name="demo", allow=["add"], requires_approval=True, timeout=20
    )

    def add(a: int, b: int) -> int:
        """My own add."""
        return a + b + 1000

    try:
        with pytest.raises(ConfigError, match="your tool 'add' would replace the one from MCP"):
            Agent(recorded(), tools=[server, add], store=None)
        mine = nbagent.Tool(add, requires_approval=True)
        agent = Agent(recorded(), tools=[server, mine], store=None)
        assert agent.tools["add"] is mine  # the one precedence rule: your own tool
    finally:
        server.close()


@contextlib.contextmanager
def kernel_servers_removed() -> Iterator[None]:
    """Whatever MCP servers the block adds kernel-wide are removed afterwards."""
    try:
        yield
    finally:
        for name in list(KERNEL_SERVERS):
            nbagent.mcp.remove_server(name)


def test_mcp_servers_loading_refuses_a_server_shadowing_a_kernel_tool(tmp_path):
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {"mcpServers": {"shadow": {"command": sys.executable, "args": [DEMO, "--run-python"]}}}
        )
    )
    with empty_registry(), kernel_servers_removed():  # other tests' @tool (an `add`) stay out
        with pytest.raises(ConfigError, match="'run_python' is offered by the kernel tools"):
            load_config(config)
        assert "shadow" not in KERNEL_SERVERS
        assert "run_python" not in nbagent.REGISTRY and "add" not in nbagent.REGISTRY
        # The same servers given to an agent with kernel=True are refused as well.
        (server,) = servers_from_config(config)
        try:
            with pytest.raises(ConfigError, match="MCP server 'shadow'"):
                Agent(recorded(), tools=[server], kernel=True, store=None)
        finally:
            server.close()


@pytest.mark.kernel
def test_agent_mcp_add_in_a_real_kernel_refuses_run_python(shared_kernel: Kernel) -> None:
    shared_kernel.run(
        "%load_ext nbagent\nimport nbagent\nfrom nbagent.magic import use\n"
        "from nbagent.testing import ScriptedModel, reply\nnbagent.REGISTRY.clear()\n"
        "seen = []\n"
        "def script(request):\n    seen.append(sorted(request.tools))\n"
        "    return reply('done')\n"
        "use(nbagent.Agent(ScriptedModel(script)))"
    )
    command = f"-- {sys.executable} {DEMO} --run-python"
    reply, messages = shared_kernel.execute(f"%agent mcp add shadow {command}")
    # IPython's own UsageError: one line on stderr, no red traceback.
    assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "UsageError"
    line = printed(messages)
    assert line.startswith("UsageError: ")
    assert "'run_python' is offered by the kernel tools" in line and "--prefix" in line
    assert "No MCP servers" in shared_kernel.run("%agent mcp list")

    # With a prefix it is added, and a --kernel cell offers both, each under its own name.
    shared_kernel.run(f"%agent mcp add shadow --prefix remote --allow run_python {command}")
    shared_kernel.run("%%agent --kernel\nwhat is there?")
    offered = eval(shared_kernel.run("print(seen[-1])"))
    assert "run_python" in offered and "remote_run_python" in offered
    shared_kernel.run("%agent mcp remove shadow\nnbagent.REGISTRY.clear()")


def test_a_later_tool_cannot_take_a_kernel_wide_servers_guarded_tool_unguarded():
    server = MCPServer.stdio(
        sys.executable, [DEMO], name="guarded", allow=["add"], requires_approval=True, timeout=20
    )
    with empty_registry(), kernel_servers_removed():  # other tests' @tool (an `add`) stay out
        nbagent.mcp.add_server(server)
        with pytest.raises(ConfigError, match="would replace the one from MCP server 'guarded'"):

            @nbagent.tool
            def add(a: int, b: int) -> int:
                """Unguarded add."""
                return a + b

        assert nbagent.REGISTRY["add"].origin == "MCP server 'guarded'"  # still the server's

        @nbagent.tool(requires_approval=True)
        def add(a: int, b: int) -> int:  # noqa: F811 - the guarded one may take the name
            """Guarded add."""
            return a + b

        assert nbagent.REGISTRY["add"].description == "Guarded add."
