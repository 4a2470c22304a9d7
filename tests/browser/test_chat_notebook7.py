"""The chat in Notebook 7 (the same server as JupyterLab's, the /notebooks/ page).

Notebook 7 is built from JupyterLab's parts but is its own application: the widget
must load, take Enter, draw the answer, and insert a code block as a cell there too
(ipylab's front end loads in Notebook 7 as in JupyterLab).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.chat_page import Chat, chat_page, saved_cells, write_notebook

SETUP = r"""
from nbagent import Agent, ChatWidget
from nbagent.testing import ScriptedModel

def script(request):
    return f"In Notebook 7 you said {request.prompt!r}:\n\n```python\nanswer = 6 * 7\n```\n"

chat = ChatWidget(Agent(ScriptedModel(script), tools=[], store=None))
chat
"""


def wait_for_idle_kernel(lab: Any, name: str, timeout: float = 120.0) -> None:
    """Until the server says the notebook's kernel is idle (Notebook 7 has no status bar)."""
    deadline = time.monotonic() + timeout
    while True:
        sessions = [s for s in lab.api("GET", "/api/sessions") if s["path"].endswith(name)]
        if sessions and sessions[0]["kernel"]["execution_state"] == "idle":
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"the kernel of {name} was not idle within {timeout} s")
        time.sleep(0.25)


@pytest.fixture(scope="module")
def page(browser: Any, jupyterlab: Any) -> Iterator[Any]:
    name = write_notebook(jupyterlab.root, "notebook7.ipynb", SETUP)

    def open_notebook7(page: Any, url: str) -> None:
        page.goto(url)
        page.locator(".jp-Notebook").wait_for()
        wait_for_idle_kernel(jupyterlab, name)

    yield from chat_page(browser, f"{jupyterlab.url}/notebooks/{name}", open_page=open_notebook7)


def test_send_with_enter_in_notebook_7(page: Any, artifacts: Any) -> None:
    assert page.locator("#main-panel, .jp-NotebookPanel").count() >= 1
    assert page.locator(".jp-LabShell").count() == 0  # Notebook 7's shell, not JupyterLab's
    chat = Chat(page)
    chat.textarea.click()
    chat.textarea.press_sequentially("hello")
    chat.textarea.press("Shift+Enter")
    chat.textarea.press_sequentially("there")
    assert chat.textarea.input_value() == "hello\nthere"
    chat.textarea.press("Enter")
    answer = chat.turns.nth(0).locator(".nba-answer")
    answer.get_by_text("In Notebook 7 you said 'hello\\nthere'").wait_for()
    chat.wait_status("Ready")
    assert page.locator(".jp-Notebook .jp-Cell").count() == 1  # Enter ran no cell
    chat.root.screenshot(path=str(artifacts / "notebook7-chat.png"))


def test_insert_a_code_block_as_a_cell_in_notebook_7(page: Any, jupyterlab: Any) -> None:
    chat = Chat(page)
    chat.turns.nth(0).locator("button.nbagent-code-insert").click()
    chat.wait_status("Inserted the code in a new cell below (not run).")
    page.locator(".jp-Notebook .jp-Cell").nth(1).locator(
        ".cm-content", has_text="answer = 6 * 7"
    ).wait_for()
    saved = saved_cells(page, jupyterlab.root / "notebook7.ipynb")
    assert saved[1] == ("answer = 6 * 7", [], None)
