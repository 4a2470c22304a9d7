"""%agent mcp ..., %agent tools with MCP servers, %%agent --output-type and the cost in
%agent usage, in a real IPython InteractiveShell."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from nbagent.magic import current_agent, use
from nbagent.mcp import KERNEL_SERVERS
from nbagent.testing import ScriptedModel, call, reply

DEMO = str(Path(__file__).parent / "servers" / "demo_mcp.py")


@pytest.fixture
def shell(monkeypatch) -> Iterator[Any]:
    from IPython.core.displaypub import CapturingDisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell

    import nbagent

    InteractiveShell.clear_instance()
    sh = InteractiveShell.instance()
    sh.display_pub = CapturingDisplayPublisher()
    saved = dict(nbagent.REGISTRY)
    nbagent.REGISTRY.clear()
    yield sh
    for name in list(KERNEL_SERVERS):
        sh.run_line_magic("agent", f"mcp remove {name}")
    nbagent.REGISTRY.clear()
    for t in saved.values():
        nbagent.REGISTRY.add(t)
    InteractiveShell.clear_instance()


def test_mcp_add_list_tools_call_and_remove(shell, capsys):
    shell.run_line_magic("load_ext", "nbagent")
    shell.run_line_magic(
        "agent", f"mcp add demo --prefix d --allow add,pid -- {sys.executable} {DEMO}"
    )
    assert "MCP server 'demo': 2 tools (d_add, d_pid)" in capsys.readouterr().out
    shell.run_line_magic("agent", "tools")
    listing = capsys.readouterr().out
    assert "d_add [MCP server demo]: Add two integers." in listing
    shell.run_line_magic("agent", "mcp list")
    assert "demo [running]" in capsys.readouterr().out

    def script(request):
        if not request.tool_results:
            return reply(calls=[call("d_add", a=2, b=3)])
        return reply(f"It is {request.tool_results[-1].content}.")

    use(ScriptedModel(script))
    shell.run_cell_magic("agent", "", "2 + 3?")
    assert shell.user_ns["_agent"].output == "It is 5."
    shell.run_line_magic("agent", "mcp remove demo")
    assert "Removed MCP server 'demo'." in capsys.readouterr().out
    assert "d_add" not in current_agent().tools
    with pytest.raises(UsageError, match="no MCP server named 'demo'"):
        shell.run_line_magic("agent", "mcp remove demo")
    with pytest.raises(UsageError, match="give -- COMMAND"):
        shell.run_line_magic("agent", "mcp add x")


def test_mcp_add_of_a_missing_script_or_program_says_so_without_starting_it(
    shell, tmp_path, monkeypatch
):
    # Before, the SDK was imported and the child started, and seconds later the error
    # said only "Connection closed" (the cause was in the child's stderr).
    shell.run_line_magic("load_ext", "nbagent")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError) as info:
        shell.run_line_magic("agent", f"mcp add miss -- {sys.executable} missing_server.py")
    assert str(info.value) == f"%agent mcp add: no file 'missing_server.py' (looked in {tmp_path})"
    with pytest.raises(UsageError, match="no program 'no-such-mcp-server' .not found on PATH."):
        shell.run_line_magic("agent", "mcp add miss -- no-such-mcp-server --stdio")
    assert "miss" not in KERNEL_SERVERS


def test_nbagent_mcp_config_is_loaded_with_the_extension(shell, capsys, monkeypatch, tmp_path):
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"cfg": {"command": sys.executable, "args": [DEMO]}}})
    )
    monkeypatch.setenv("NBAGENT_MCP_CONFIG", str(config))
    shell.run_line_magic("load_ext", "nbagent")
    assert "MCP server 'cfg': 10 tools" in capsys.readouterr().out
    assert "cfg" in KERNEL_SERVERS
    shell.run_line_magic("agent", f"mcp load {config}")  # loading again replaces it
    assert KERNEL_SERVERS["cfg"].running


def test_output_type_option_and_cost_in_usage(shell, capsys):
    shell.run_line_magic("load_ext", "nbagent")
    shell.run_cell("from pydantic import BaseModel\nclass City(BaseModel):\n    name: str\n")
    use(ScriptedModel(['{"value": [{"name": "Paris"}, {"name": "Lyon"}]}']))
    shell.run_cell_magic("agent", "--output-type list[City]", "Two cities")
    result = shell.user_ns["_agent"]
    assert [c.name for c in result.output] == ["Paris", "Lyon"]
    assert list(result.to_frame()["name"]) == ["Paris", "Lyon"]
    with pytest.raises(UsageError, match="--output-type 'Nope'"):
        shell.run_cell_magic("agent", "--output-type Nope", "x")
    shell.run_line_magic("agent", "usage")
    assert "cost unknown" in capsys.readouterr().out  # a scripted model has no price
