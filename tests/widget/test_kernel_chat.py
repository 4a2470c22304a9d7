"""ChatWidget(kernel=True): {name} interpolation, the code in the approval row, and
"allow for this run", with a real InteractiveShell's namespace."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from nbagent import Agent
from nbagent.chat import ChatWidget
from nbagent.testing import ScriptedModel, call, reply


@pytest.fixture
def shell() -> Iterator[Any]:
    from IPython.core.interactiveshell import InteractiveShell

    InteractiveShell.clear_instance()
    sh = InteractiveShell.instance()
    sh.user_ns["sales"] = pd.DataFrame({"region": ["n", "s"] * 25, "revenue": range(50)})
    yield sh
    InteractiveShell.clear_instance()


def html_of(chat: ChatWidget) -> str:
    return chat.transcript_html


async def test_name_interpolation_says_what_was_sent(shell: Any) -> None:
    model = ScriptedModel(lambda r: "ok")
    chat = ChatWidget(Agent(model, tools=[], store=None))
    task = chat.submit("Summarise {sales}")
    assert task is not None
    await asyncio.wait_for(task, 10)
    assert model.requests[0].prompt.startswith(
        "Summarise <DataFrame with 50 rows × 2 columns; first 5 rows:>"
    )
    assert (
        '<div class="nbagent-sent-note">Sent to the model: sales as the first 5 of 50 rows '
        "(DataFrame, 2 columns).</div>"
    ) in html_of(chat)


async def test_undefined_name_is_said_and_nothing_is_sent(shell: Any) -> None:
    model = ScriptedModel(lambda r: "ok")
    chat = ChatWidget(Agent(model, tools=[], store=None))
    assert chat.submit("Look at {slaes}") is None
    assert "'slaes' is not defined in the notebook" in chat.status
    assert model.requests == []


async def test_run_python_shows_the_code_and_allow_for_this_run(shell: Any, wait_until) -> None:
    def script(request: Any) -> Any:
        if request.round_index < 2:
            n = request.round_index
            return reply("", [call("run_python", code=f"step{n} = sales.revenue.sum() + {n}")])
        return reply("done")

    model = ScriptedModel(script)
    chat = ChatWidget(model=model, kernel=True, tools=[], store=None)
    task = chat.submit("Compute")
    assert task is not None
    await wait_until(lambda: bool(chat.pending_approvals), 10)
    (row,) = chat.approvals
    assert row["question"] == "Allow run_python to run this code?"
    assert "step0" in row["code_html"] and "<span" in row["code_html"]  # highlighted
    assert "step0" not in shell.user_ns  # not run before the answer
    # "Allow for this run" in the page: the second call is not asked.
    chat._handle_custom_msg({"kind": "allow_for_run", "id": row["id"]}, [])
    result = await asyncio.wait_for(task, 10)
    assert result is not None and result.output == "done"
    assert (shell.user_ns["step0"], shell.user_ns["step1"]) == (1225, 1226)
    approvals = [r.approval for t in result.rounds for r in t.results]
    assert approvals == ["approved by user", "approved by user (allowed for this run)"]
    # The first request carried the inventory in its system message.
    assert "sales: DataFrame 50 rows × 2 columns" in (model.requests[0].request.system or "")


def text_of(html: str) -> str:
    """What a reader sees of ``html``: the tags dropped, the entities read."""
    import html as html_module
    import re

    return html_module.unescape(re.sub(r"<[^>]+>", "", html))


def panels_of(turn_html: str) -> str:
    """The round panels of a turn (not its status line, cards or answer)."""
    start = turn_html.index('<details class="nba-round')
    return turn_html[start : turn_html.rindex("</details>")]


async def test_the_code_of_a_call_shows_once_highlighted_with_its_other_arguments(
    shell: Any, tmp_path: Any, wait_until
) -> None:
    from nbagent.chat.code_calls import IN_APPROVAL

    code = "answer_marker = sales.revenue.sum()\nprint('<b>', answer_marker)"
    line = "answer_marker = sales.revenue.sum()"

    def script(request: Any) -> Any:
        if request.round_index == 0:  # a model adding an argument run_python does not take
            return reply("", [call("run_python", code=code, note="extra <i>")])
        if request.round_index == 1:
            return reply("", [call("run_python", code=code)])
        return reply("done")

    chat = ChatWidget(model=ScriptedModel(script), kernel=True, tools=[], store=tmp_path / "h.db")
    task = chat.submit("Compute")
    assert task is not None
    await wait_until(lambda: bool(chat.pending_approvals), 10)
    await wait_until(lambda: IN_APPROVAL in chat.live.get("html", ""), 10)
    # Waiting: the code is in the approval row, highlighted, and not in the panel.
    (row,) = chat.approvals
    assert text_of(row["code_html"]).count(line) == 1
    waiting_panel = panels_of(chat.live["html"]).split("Round 2")[-1]
    assert line not in text_of(waiting_panel) and "&quot;code&quot;" not in waiting_panel
    chat.approve(row["id"])
    await asyncio.wait_for(task, 10)

    stored = ChatWidget.resume(store=tmp_path / "h.db", model=ScriptedModel(), kernel=True)
    for turn in (chat.turns[0], stored.turns[0]):
        panels = panels_of(turn["html"])
        assert "&quot;code&quot;" not in panels  # not as JSON any more
        assert text_of(panels).count(line) == 2  # once per call, highlighted
        assert panels.count('class="nbagent-approval-code"') == 2
        # The argument the model added still shows, escaped, as the other arguments do.
        assert "&quot;note&quot;: &quot;extra &lt;i&gt;&quot;" in panels
    assert shell.user_ns["answer_marker"] == 1225
