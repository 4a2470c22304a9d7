"""Item 1 in a real kernel: a tool's BaseException never leaves later cells hanging.

An async tool raising KeyboardInterrupt or calling sys.exit(), and a value whose
repr raises SystemExit, once killed nbagent's event loop thread: that cell and
every later ``run_sync`` / ``%%agent`` cell waited forever. Here each is that
call's error result and the next cells answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.html import HtmlFacts
from tests.support.kernel import Kernel, kernel_environment, last_html

pytestmark = pytest.mark.kernel

SETUP = '''
%load_ext nbagent
import sys
import nbagent
from nbagent.testing import ScriptedModel, reply, call

class Exiting:
    def __repr__(self):
        raise SystemExit("from repr")

@nbagent.tool
async def interrupting() -> str:
    """Raises KeyboardInterrupt."""
    raise KeyboardInterrupt

@nbagent.tool
async def exiting() -> str:
    """Calls sys.exit()."""
    sys.exit(2)

@nbagent.tool
def exiting_value() -> object:
    """Returns a value whose repr raises SystemExit."""
    return Exiting()

def script(request):
    if request.tool_results:
        return " | ".join(r.content for r in request.tool_results)
    if request.prompt.startswith("use "):
        return reply(calls=[call(request.prompt[4:])])
    return "You said: " + request.prompt

model = ScriptedModel(script)
agent = nbagent.Agent(model, tools=[interrupting, exiting, exiting_value], timeout=20)
%agent model model
'''


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[Kernel]:
    started = Kernel(kernel_environment(tmp_path / "nbagent-home"), tmp_path)
    started.run(SETUP)
    yield started
    started.close()


def test_base_exceptions_from_tools_and_values_leave_later_cells_working(kernel):
    cells = [
        ('print(agent.run_sync("use interrupting").output)', "Error: KeyboardInterrupt: \n"),
        ('print(agent.run_sync("use exiting").output)', "Error: SystemExit: 2\n"),
        ('print(agent.run_sync("use exiting_value").output)',
         "<Exiting: unprintable (SystemExit)>\n"),
        ('print(agent.run_sync("still there?").output)', "You said: still there?\n"),
    ]  # fmt: skip
    for code, expected in cells:
        assert kernel.run(code, timeout=30) == expected
    reply, messages = kernel.execute("%%agent\nuse exiting", timeout=30)
    assert reply["content"]["status"] == "ok"
    assert "SystemExit: 2" in HtmlFacts(last_html(messages)).text
    reply, messages = kernel.execute("%%agent\nand after that?", timeout=30)
    assert "You said: and after that?" in HtmlFacts(last_html(messages)).text
    threads = kernel.run(
        "import threading\n"
        "print([t.name for t in threading.enumerate()].count('nbagent-event-loop'))"
    )
    assert threads == "1\n"  # the same loop thread served every cell
