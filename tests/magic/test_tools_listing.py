"""``%agent tools`` lists the kernel tools a ``--kernel`` cell adds, marked as such.

In a real ipykernel: the names it lists as kernel tools are exactly the tools a
``%%agent --kernel`` cell then offers the model beside the user's own; with
``Agent(kernel=True)`` it says they are on for every run; a user tool of the
same name replaces the kernel one (and the listing says so).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from nbagent.kernel import KERNEL_TOOL_NAMES
from tests.support.kernel import Kernel

pytestmark = pytest.mark.kernel

SETUP = '''
%load_ext nbagent
import nbagent
from nbagent import Agent
from nbagent.magic import use
from nbagent.testing import ScriptedModel, reply

nbagent.REGISTRY.clear()  # the shared kernel's earlier tests registered their own

@nbagent.tool
def lookup(key: str) -> str:
    """Look a key up."""
    return key

seen = []
def script(request):
    seen.append(sorted(request.tools))
    return reply("done")
use(Agent(ScriptedModel(script)))  # a fresh agent: every @tool, no kernel=True
'''


def _kernel_lines(text: str) -> dict[str, str]:
    """``name -> flags`` of the lines after the "Kernel tools" heading."""
    _, _, listed = text.partition("Kernel tools (")
    found: dict[str, str] = {}
    for line in listed.splitlines()[1:]:
        match = re.match(r"(\w+)((?: \[[^\]]*\])*): ", line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def test_tools_lists_the_kernel_tools_a_kernel_cell_adds(shared_kernel: Kernel) -> None:
    shared_kernel.run(SETUP)
    text = shared_kernel.run("%agent tools")
    assert "lookup: Look a key up." in text
    assert "Kernel tools (added by %%agent --kernel (-k)):" in text
    kernel = _kernel_lines(text)
    assert sorted(kernel) == sorted(KERNEL_TOOL_NAMES)
    assert all("[kernel tool]" in flags for flags in kernel.values())
    assert "[asks approval]" in kernel["run_python"]
    assert "[asks approval]" not in kernel["list_variables"]
    assert re.search(r"^run_python \[kernel tool\] \[asks approval\]: Run Python", text, re.M)

    # What the listing promised is what a --kernel cell offers; a plain cell offers none.
    shared_kernel.run("%%agent --kernel\nwhat is there?")
    shared_kernel.run("%%agent\nand without?")
    offered: Any = eval(shared_kernel.run("print(seen[-2:])"))
    with_kernel, without = offered
    assert sorted(with_kernel) == sorted([*kernel, "lookup"])
    assert without == ["lookup"]


def test_tools_with_agent_kernel_true_and_a_shadowing_tool(shared_kernel: Kernel) -> None:
    shared_kernel.run(SETUP)
    shared_kernel.run(
        '''
@nbagent.tool
def last_error() -> str:
    """My own last error."""
    return "mine"
use(Agent(ScriptedModel(script), kernel=True))
'''
    )
    text = shared_kernel.run("%agent tools")
    assert "Kernel tools (on for every run: kernel=True):" in text
    kernel = _kernel_lines(text)
    assert sorted(kernel) == sorted(KERNEL_TOOL_NAMES)
    assert "[not used: your tool of this name replaces it]" in kernel["last_error"]
    assert "not used" not in kernel["run_python"]
    assert "kernel tools: on for every run (kernel=True)" in shared_kernel.run("%agent")
    shared_kernel.run("%%agent\nwhat is there?")  # kernel=True: no --kernel needed
    offered: Any = eval(shared_kernel.run("print(seen[-1])"))
    assert sorted(offered) == sorted({*KERNEL_TOOL_NAMES, "lookup"})
    assert "My own" in shared_kernel.run(
        "print(nbagent.magic.current_agent().tools['last_error'].description)"
    )
    shared_kernel.run("nbagent.REGISTRY.clear()")
