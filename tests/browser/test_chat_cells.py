"""Code from the chat into the notebook, in a real JupyterLab: Insert as cell and propose_cell.

A code block of an answer has Insert as cell next to Copy: the notebook gets a new
cell below the chat holding exactly the block's text, not run. The model's
propose_cell tool, called in a chat run, goes the same way. Both are checked on
the page and in the notebook file after saving.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.chat_page import Chat, chat_page, saved_cells, write_notebook

CODE = 'total = sum(range(5))\nprint(f"total: {total}")'
PROPOSED = "proposed = [n * n for n in range(3)]"

SETUP = r"""
from nbagent import Agent, ChatWidget
from nbagent.testing import ScriptedModel, call, reply

CODE = 'total = sum(range(5))\nprint(f"total: {total}")'

def script(request):
    if "propose" in request.prompt and not request.tool_results:
        return reply(calls=[call("propose_cell", code="proposed = [n * n for n in range(3)]")])
    if request.tool_results:
        return "I put it in a cell below."
    return "Run this:\n\n```python\n" + CODE + "\n```\n"

chat = ChatWidget(Agent(ScriptedModel(script), kernel=True, store=None))
chat
"""


@pytest.fixture(scope="module")
def page(browser: Any, jupyterlab: Any) -> Iterator[Any]:
    write_notebook(jupyterlab.root, "cells.ipynb", SETUP)
    yield from chat_page(browser, jupyterlab.notebook_url("cells.ipynb"))


def test_insert_a_code_block_as_a_cell(page: Any, jupyterlab: Any, artifacts: Any) -> None:
    chat = Chat(page)
    chat.textarea.fill("how do I add up 0..4?")
    chat.textarea.press("Enter")
    insert = chat.turns.nth(0).locator("button.nbagent-code-insert")
    insert.wait_for()
    assert chat.turns.nth(0).locator("button.nbagent-code-copy").is_visible()
    chat.wait_status("Ready")
    chat.root.screenshot(path=str(artifacts / "lab-chat-insert.png"))
    insert.click()
    chat.wait_status("Inserted the code in a new cell below (not run).")
    cells = page.locator(".jp-Notebook .jp-Cell")
    cells.nth(1).locator(".cm-content", has_text="total = sum(range(5))").wait_for()
    assert cells.count() == 2
    source, outputs, count = saved_cells(page, jupyterlab.root / "cells.ipynb")[1]
    assert (source, outputs, count) == (CODE, [], None)  # exactly the block, never run


def test_propose_cell_from_the_chat_adds_a_cell(page: Any, jupyterlab: Any) -> None:
    chat = Chat(page)
    chat.textarea.fill("propose a cell please")
    chat.textarea.press("Enter")
    chat.turns.nth(1).locator(".nba-answer", has_text="I put it in a cell below").wait_for()
    cells = page.locator(".jp-Notebook .jp-Cell")
    cells.nth(1).locator(".cm-content", has_text="proposed = ").wait_for()
    saved = saved_cells(page, jupyterlab.root / "cells.ipynb")
    assert [cell[0] for cell in saved] == [saved[0][0], PROPOSED, CODE]
    assert saved[1][1:] == ([], None)
