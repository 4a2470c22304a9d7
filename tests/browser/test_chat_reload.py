"""The chat keeps going across page reloads and kernel restarts, in a real JupyterLab.

The widget draws from the kernel's state, so a reload with the kernel alive shows
the whole chat, a streaming run included; after a restart, ChatWidget.resume()
draws it from the history file. The keys are checked here too: Esc stops, Up in
the empty box brings back the last message. The static twin stays hidden while
the widget runs and is saved with the notebook.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.browser.chat_page import Chat, chat_page, write_notebook

SETUP = r"""
from pathlib import Path
from nbagent import Agent, ChatWidget
from nbagent.testing import ScriptedModel

HISTORY = Path("chat-history.db")
sales = [120, 340, 560]  # mentioned as @sales: sent described, shown as a chip

def script(request):
    if "slow" in request.prompt:
        return "stream " * 4000
    return f"Answer to {request.prompt!r} with **bold**"

chat = ChatWidget(Agent(ScriptedModel(script, chunk_size=4, delay=0.02), tools=[], store=HISTORY))
chat
"""

RESUME = r"""
from nbagent import ChatWidget
from nbagent.testing import ScriptedModel
again = ChatWidget.resume(store="chat-history.db", model=ScriptedModel(["resumed fine"]), tools=[])
again
"""


@pytest.fixture(scope="module")
def notebook(jupyterlab: Any) -> str:
    return write_notebook(jupyterlab.root, "reload.ipynb", SETUP)


def save(page: Any) -> None:
    page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-InputArea").click()
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    page.wait_for_timeout(1000)


@pytest.fixture(scope="module")
def page(browser: Any, jupyterlab: Any, notebook: str) -> Iterator[Any]:
    yield from chat_page(browser, jupyterlab.notebook_url(notebook))


def test_keys_up_edits_last_and_esc_stops(page: Any) -> None:
    chat = Chat(page)
    chat.textarea.fill("first question on @sales ")  # the space: Enter sends, not picks
    chat.textarea.press("Enter")
    chat.turns.nth(0).locator(".nba-answer strong", has_text="bold").wait_for()
    chat.wait_status("Ready")
    # The twin is in the output for viewers without a kernel, hidden here.
    assert page.locator(".nbagent-chat-twin").count() == 1
    assert not page.locator(".nbagent-chat-twin").is_visible()
    chat.textarea.click()
    chat.textarea.press("ArrowUp")
    assert chat.textarea.input_value() == "first question on @sales"
    chat.textarea.fill("please be slow")
    chat.textarea.press("Enter")
    chat.root.locator(".nbagent-chat-live .nba-stream", has_text="stream stream").wait_for()
    chat.textarea.press("Escape")
    chat.wait_status("Stopped: cancelled", timeout=10_000)
    assert "[run cancelled]" in chat.turns.nth(1).locator(".nba-answer").inner_text()
    assert page.locator(".jp-Notebook.jp-mod-editMode, .jp-Notebook").count() >= 1


def test_reload_mid_stream_shows_the_running_turn(page: Any, jupyterlab: Any) -> None:
    chat = Chat(page)
    chat.textarea.fill("slow again")
    chat.textarea.press("Enter")
    chat.root.locator(".nbagent-chat-live .nba-stream", has_text="stream stream").wait_for()
    save(page)
    page.reload(wait_until="domcontentloaded")
    page.locator(".jp-Notebook").wait_for()
    chat = Chat(page)
    live = chat.root.locator(".nbagent-chat-live .nba-stream")
    live.wait_for(timeout=60_000)  # the widget restored from the running kernel
    assert chat.turns.count() == 3  # two finished turns and the one streaming
    before = len(live.inner_text())
    region = chat.root.locator(".nbagent-chat-live").element_handle()  # redrawn inside
    page.wait_for_function(
        "([el, n]) => el.textContent.length > n + 40", arg=[region, before]
    )  # still streaming after the reload
    assert chat.root.locator("button.nbagent-chat-stop").is_enabled()
    chat.root.locator("button.nbagent-chat-stop").click()
    chat.wait_status("Stopped: cancelled", timeout=10_000)

    page.reload(wait_until="domcontentloaded")  # and after the run
    page.locator(".jp-Notebook").wait_for()
    chat = Chat(page)
    chat.turns.nth(2).locator(".nba-footer", has_text="cancelled").wait_for(timeout=60_000)
    assert chat.turns.count() == 3
    assert chat.root.locator(".nbagent-chat-live").inner_text() == ""


def test_saved_notebook_has_the_static_twin(page: Any, jupyterlab: Any, notebook: str) -> None:
    save(page)
    saved = nbformat.read(jupyterlab.root / notebook, as_version=4)
    html = "".join(o.get("data", {}).get("text/html", "") for o in saved.cells[0].outputs)
    assert 'class="nbagent-chat-twin"' in html
    assert "first question" in html and "<strong>bold</strong>" in html
    # What a viewer without a kernel (nbconvert, like GitHub or nbviewer) shows.
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_notebook_node(saved)
    assert "nbagent-chat-twin" in body and "first question" in body


def test_restart_and_resume(page: Any, artifacts: Path) -> None:
    page.locator(".lm-MenuBar-itemLabel").get_by_text("Kernel", exact=True).click()
    page.locator(".lm-Menu-itemLabel").get_by_text("Restart Kernel…", exact=True).click()
    page.locator(".jp-Dialog-button.jp-mod-accept").click()
    page.get_by_text("| Idle").first.wait_for(timeout=120_000)
    cells = page.locator(".jp-Notebook .jp-Cell")
    cells.last.click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")  # a new cell below
    page.keyboard.press("Enter")
    page.keyboard.insert_text(RESUME.strip())
    resume_cell = cells.count() - 1
    page.keyboard.press("Shift+Enter")
    chat = Chat(page, cell=resume_cell)
    chat.turns.nth(2).wait_for(timeout=120_000)
    prompts = chat.turns.locator(".nbagent-user").all_inner_texts()
    assert [p.removeprefix("You").strip() for p in prompts] == [
        "first question on @sales",  # as typed, not the list sent in its place
        "please be slow",
        "slow again",
    ]
    assert chat.turns.nth(0).locator(".nbagent-chip").inner_text() == "@sales"
    chat.textarea.fill("after the restart")
    chat.textarea.press("Enter")
    chat.turns.nth(3).locator(".nba-answer", has_text="resumed fine").wait_for()
    chat.root.screenshot(path=str(artifacts / "lab-chat-resumed.png"))
