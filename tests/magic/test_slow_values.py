"""``{name}`` prompt fields whose description hangs or raises never hang the cell.

In a real ipykernel: a value whose ``__repr__`` sleeps 60 s, a property that
sleeps, a last error whose ``str`` sleeps and a repr raising ``SystemExit`` each
become a short placeholder within the prompt's time bound
(:data:`nbagent.kernel.prompt.PROMPT_SECONDS`, 5 s for all fields together); the
"Sent to the model" line says so, and the next cell runs at once. The kernel's
execute deadline (well under 60 s) is what fails the test if a cell hangs.
The ChatWidget's ``{name}`` path is checked on a real InteractiveShell.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from nbagent import Agent
from nbagent.chat import ChatWidget
from nbagent.kernel.prompt import PROMPT_SECONDS
from nbagent.testing import ScriptedModel
from tests.support.kernel import Kernel, displays

SETUP = """
%load_ext nbagent
import time
from nbagent import Agent
from nbagent.magic import use
from nbagent.testing import ScriptedModel

class Slow:
    def __repr__(self):
        time.sleep(60)
        return "never"

class Holder:
    @property
    def value(self):
        time.sleep(60)
        return 1

class Leaving:
    def __repr__(self):
        raise SystemExit(3)

slow, holder, leaving, fine = Slow(), Holder(), Leaving(), [1, 2, 3]
model = ScriptedModel(lambda r: "ok")
use(Agent(model, tools=[], store=None))
"""

# A deadline for the cell, not a speed assertion: a hang would take 60 s or more.
CELL_DEADLINE = 45

pytestmark = pytest.mark.kernel


def _notes(messages: list[dict[str, Any]]) -> list[str]:
    return [
        m["content"]["data"]["text/plain"]
        for m in displays(messages)
        if "Sent to the model" in m["content"]["data"].get("text/plain", "")
    ]


def test_a_hanging_repr_becomes_a_placeholder(shared_kernel: Kernel) -> None:
    shared_kernel.run(SETUP)
    reply, messages = shared_kernel.execute(
        "%%agent\nLook at {slow}, {holder.value}, {leaving} and {fine}.", timeout=CELL_DEADLINE
    )
    assert reply["content"]["status"] == "ok", reply["content"]
    prompt = shared_kernel.run("print(model.requests[-1].prompt)").strip()
    bound = f"{PROMPT_SECONDS:g} s"
    assert prompt == (
        f"Look at <Slow: not described, its repr took over {bound}>, "
        f"<Holder: not described, reading its attributes took over {bound}>, "
        "<Leaving: not described (SystemExit)> and [1, 2, 3]."
    )
    assert _notes(messages) == [
        f"Sent to the model: slow as a placeholder (its repr did not finish within {bound}); "
        f"holder.value as a placeholder (reading its attributes did not finish within {bound}); "
        "leaving as a placeholder (describing it raised SystemExit)."
    ]
    # The kernel goes on at once (the sleeping reprs are left on worker threads).
    assert shared_kernel.run("print(6 * 7)", timeout=10).strip() == "42"


def test_a_last_error_whose_str_hangs(shared_kernel: Kernel) -> None:
    shared_kernel.run(SETUP)
    shared_kernel.execute(  # its str hangs only once armed: IPython shows it first
        "class Stuck(Exception):\n"
        "    armed = False\n"
        "    def __str__(self):\n"
        "        if Stuck.armed:\n"
        "            time.sleep(60)\n"
        "        return 'stuck'\n"
        "raise Stuck()"
    )
    shared_kernel.run("Stuck.armed = True")
    reply, messages = shared_kernel.execute("%%agent\nExplain {Err}", timeout=CELL_DEADLINE)
    assert reply["content"]["status"] == "ok", reply["content"]
    prompt = shared_kernel.run("print(model.requests[-1].prompt)").strip()
    bound = f"{PROMPT_SECONDS:g} s"
    assert prompt == f"Explain <the last error: not described, describing it took over {bound}>"
    assert "Err as a placeholder" in _notes(messages)[0]


@pytest.fixture
def shell() -> Iterator[Any]:
    from IPython.core.interactiveshell import InteractiveShell

    InteractiveShell.clear_instance()
    yield InteractiveShell.instance()
    InteractiveShell.clear_instance()


async def test_chat_widget_name_with_a_hanging_repr(shell: Any) -> None:
    release = threading.Event()

    class Stalled:
        def __repr__(self) -> str:
            release.wait(60)
            return "late"

    shell.user_ns["stalled"] = Stalled()
    model = ScriptedModel(lambda r: "ok")
    chat = ChatWidget(Agent(model, tools=[], store=None))
    try:
        task = chat.submit("What is {stalled}?")
        assert task is not None
        await asyncio.wait_for(task, CELL_DEADLINE)
    finally:
        release.set()
    bound = f"{PROMPT_SECONDS:g} s"
    assert model.requests[0].prompt == (
        f"What is <Stalled: not described, its repr took over {bound}>?"
    )
    html = chat.transcript_html
    assert "Sent to the model: stalled as a placeholder (its repr did not finish" in html
