"""run_python's approval row in a real JupyterLab (headless Chromium): the code is shown,
highlighted, before it runs, and it runs only after Approve. Long code is shown whole in
a scrolling box, with bidi and control characters as visible marks (issue 19 item 4)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.browser.test_jupyterlab import Notebook

SETUP = r"""
import pandas as pd
from nbagent import ChatWidget
from nbagent.testing import ScriptedModel, call, reply

sales = pd.DataFrame({"region": ["north", "south"] * 25, "revenue": range(50)})
CODE = "ran_by_agent = int(sales.revenue.sum())\nran_by_agent"

TRICKY = ("# \u202eadmin = True\u2066 \x1b[2J\n"
          + "".join(f"pad_{i} = {i}\n" for i in range(2500)) + "tricky_ran = True  # LAST LINE\n")

def script(request):
    if request.round_index == 0 and request.prompt == "Run the tricky code":
        return reply(calls=[call("run_python", code=TRICKY)])
    if request.round_index == 0:
        return reply(calls=[call("run_python", code=CODE)])
    if request.prompt == "Run the tricky code":
        return reply("Not run.")
    return reply("The total is " + request.tool_results[-1].content.split()[-1] + ".")

chat = ChatWidget(model=ScriptedModel(script), kernel=True, tools=[], store=None)
chat
"""


@pytest.fixture(scope="module")
def lab(browser: Any, jupyterlab: Any, artifacts: Path) -> Iterator[Notebook]:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(SETUP.strip())]
    nbformat.write(nb, jupyterlab.root / "kernel_agent.ipynb")
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(60_000)
    notebook = Notebook(page)
    page.goto(jupyterlab.notebook_url("kernel_agent.ipynb"))
    page.locator(".jp-Notebook").wait_for()
    page.get_by_text("| Idle").first.wait_for(timeout=120_000)
    page.locator(".lm-MenuBar-itemLabel").get_by_text("Run", exact=True).click()
    page.locator(".lm-Menu-itemLabel").get_by_text("Run All Cells", exact=True).click()
    notebook.chat.wait_for(timeout=120_000)
    notebook.status.wait_for()
    yield notebook
    context.close()


def test_code_is_shown_highlighted_and_runs_only_after_approve(
    lab: Notebook, artifacts: Path
) -> None:
    lab.textarea.fill("What is the total revenue?")
    lab.textarea.press("Enter")
    code = lab.chat.locator(".nbagent-chat-approval-code")
    code.wait_for(timeout=30_000)
    lab.wait_status("Waiting for approval: run_python")
    assert code.inner_text().strip() == ("ran_by_agent = int(sales.revenue.sum())\nran_by_agent")
    assert code.locator("span").count() > 3  # highlighted tokens
    buttons = lab.chat.locator(".nbagent-chat-approval button")
    assert buttons.all_inner_texts() == [
        "Approve",
        "Allow for this run",
        "Always allow this tool",
        "Deny",
    ]
    turn = lab.turns.nth(0)
    assert turn.locator(".nba-answer").count() == 0  # nothing ran yet
    lab.chat.screenshot(path=str(artifacts / "lab-kernel-approval.png"))

    lab.chat.locator(".nbagent-chat-approval button", has_text="Approve").click()
    turn.locator(".nba-answer", has_text="The total is 1225.").wait_for(timeout=30_000)
    assert lab.chat.locator(".nbagent-chat-approval").count() == 0
    assert "approved by user" in turn.locator("details.nba-round").text_content()
    lab.assert_nothing_ran()


def test_long_code_with_hidden_characters_is_shown_whole_and_visibly(lab: Notebook) -> None:
    lab.textarea.fill("Run the tricky code")
    lab.textarea.press("Enter")
    code = lab.chat.locator(".nbagent-chat-approval-code")
    code.wait_for(timeout=30_000)
    lab.wait_status("Waiting for approval: run_python")
    text = code.inner_text()
    assert not [c for c in ("\u202e", "\u2066", "\x1b") if c in text]
    assert text.startswith("# ⟦U+202E⟧admin = True⟦U+2066⟧ ⟦U+001B⟧[2J")
    assert "tricky_ran = True  # LAST LINE" in text and text.count("pad_") == 2500
    box = code.locator(".nbagent-approval-code")
    assert box.evaluate("e => e.scrollHeight > e.clientHeight")  # scrolls, not cut
    lab.chat.locator(".nbagent-chat-approval button", has_text="Deny").click()
    lab.turns.nth(1).locator(".nba-answer", has_text="Not run.").wait_for(timeout=30_000)
    assert "denied by user" in lab.turns.nth(1).locator("details.nba-round").text_content()
