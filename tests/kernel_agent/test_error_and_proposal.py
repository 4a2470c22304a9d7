"""``last_error`` and ``propose_cell`` in a real ipykernel."""

from __future__ import annotations

import pytest

from tests.support.kernel import Kernel

pytestmark = pytest.mark.kernel

SETUP = """
%load_ext nbagent
import nbagent
from nbagent.kernel import kernel_tools
from nbagent.testing import ScriptedModel, reply, call

def use(name, **arguments):
    def script(request):
        if request.round_index == 0:
            return reply("", [call(name, **arguments)])
        return reply("ok")
    model = ScriptedModel(script)
    nbagent.magic.use(nbagent.Agent(model, tools=kernel_tools(), store=None))
    return model

def last_content():
    agent = nbagent.magic.current_agent()
    print(agent.conversation.messages[-1].rounds[-1].results[-1].content)
"""


def test_last_error_names_the_cell_and_the_exception(shared_kernel: Kernel) -> None:
    shared_kernel.run(SETUP + "\nmodel = use('last_error')")
    reply, _ = shared_kernel.execute("def ratio(a, b):\n    return a / b\n\nratio(1, 0)")
    assert reply["content"]["status"] == "error"
    number = reply["content"]["execution_count"]
    shared_kernel.run("%%agent\nwhy did it fail?")
    text = shared_kernel.run("last_content()")
    assert f"In [{number}]:\ndef ratio(a, b):\n    return a / b\n\nratio(1, 0)" in text
    assert "ZeroDivisionError: division by zero" in text
    assert "return a / b" in text  # the traceback's last frame


def test_propose_cell_puts_the_code_in_a_new_cell_below(shared_kernel: Kernel) -> None:
    code = "sales.plot(x='month', y='revenue')"
    # A kernel shared with other tests: no `sales` of theirs either.
    shared_kernel.run("globals().pop('sales', None)")
    shared_kernel.run(SETUP + f"\nmodel = use('propose_cell', code={code!r})")
    reply, _ = shared_kernel.execute("%%agent\npropose a plot")
    assert reply["content"]["status"] == "ok"
    assert {"source": "set_next_input", "text": code, "replace": False} in reply["content"][
        "payload"
    ]
    text = shared_kernel.run("last_content()")
    assert text.startswith("Proposed: when this cell finishes, the notebook shows the code")
    # Never run: `sales` does not even exist in this kernel.
    assert shared_kernel.run("print('sales' in globals())").strip() == "False"
