"""Tool cards: each call's live state, parallel calls grouped, timing and the round's figures.

The cards are read from the widget's synced state (``live`` while the run goes,
``turns`` after), which is what the page draws; and from a reopened history file.
"""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path

from nbagent import Agent, tool
from nbagent.chat import ChatWidget
from nbagent.testing import ScriptedModel, call, reply


def cards(html: str) -> list[tuple[str, str]]:
    """(tool name, state) of every card in ``html``, in order."""
    found = re.findall(
        r'data-state="(\w+)"[^>]*><span class="nbagent-card-name">([^<]*)</span>', html
    )
    return [(name, state) for state, name in found]


async def test_cards_follow_running_done_and_failed_and_group_parallel_calls(
    wait_until,
) -> None:
    release = threading.Event()  # the tool runs on a worker thread, not this loop

    @tool(register=False)
    def slow_sum(a: int, b: int) -> int:
        """Adds, slowly."""
        release.wait(30)
        return a + b

    @tool(register=False)
    def broken() -> str:
        """Always fails."""
        raise ValueError("no <luck> today")

    model = ScriptedModel(
        [reply("Both at once.", calls=[call("broken"), call("slow_sum", a=1, b=2)]), "Done."]
    )
    chat = ChatWidget(Agent(model, tools=[slow_sum, broken]))
    task = chat.submit("go")
    assert task is not None
    await wait_until(lambda: ("slow_sum", "running") in cards(chat.live.get("html", "")))
    assert cards(chat.live["html"]) == [("broken", "failed"), ("slow_sum", "running")]
    assert 'data-elapsed="' in chat.live["html"]  # the page counts its seconds on
    release.set()
    await asyncio.wait_for(task, 5)

    html = chat.turns[0]["html"]
    assert cards(html) == [("broken", "failed"), ("slow_sum", "done")]
    # One group for the two parallel calls, with the round's figures.
    assert html.count('class="nbagent-card-group"') == 1 and 'data-calls="2"' in html
    assert "Round 1 · 2 calls · " in html and " tokens · " in html
    assert "no &lt;luck&gt; today" in html and "<luck>" not in html  # escaped
    assert 'data-elapsed="' not in html  # finished calls show their own duration


async def test_a_call_waiting_for_approval_says_so(wait_until) -> None:
    @tool(register=False, requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    model = ScriptedModel([reply(calls=[call("delete_file", path="x")]), "ok"])
    chat = ChatWidget(Agent(model, tools=[delete_file]))
    task = chat.submit("delete")
    assert task is not None
    await wait_until(lambda: bool(chat.pending_approvals))
    await wait_until(lambda: cards(chat.live.get("html", "")) == [("delete_file", "waiting")])
    assert "awaiting approval" in chat.live["html"]
    chat.approve(chat.pending_approvals[0].id)
    await asyncio.wait_for(task, 5)
    assert cards(chat.turns[0]["html"]) == [("delete_file", "done")]


async def test_cards_come_back_with_the_stored_conversation(tmp_path: Path) -> None:
    @tool(register=False)
    def double(x: int) -> int:
        """Doubles."""
        return 2 * x

    model = ScriptedModel([reply(calls=[call("double", x=1), call("double", x=2)]), "4 and 2"])
    chat = ChatWidget(Agent(model, tools=[double], store=tmp_path / "h.db"))
    await asyncio.wait_for(chat.submit("double them"), 5)
    again = ChatWidget.resume(store=tmp_path / "h.db", model=ScriptedModel())
    html = again.turns[0]["html"]
    assert cards(html) == [("double", "done"), ("double", "done")]
    assert 'data-calls="2"' in html and "Round 1 · 2 calls" in html
