"""Edit a message and switch between branches in a real JupyterLab (headless Chromium).

The user clicks Edit on an earlier message, changes it and presses Enter; the chat
shows the branch, with "2/2" arrows on the edited message; the arrows bring back
the original and its later turns. The kernel's widget says which branch it shows.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.chat_page import Chat, chat_page, write_notebook

SETUP = r"""
from pathlib import Path
from nbagent import Agent, ChatWidget
from nbagent.testing import ScriptedModel, reply

def echo(request):
    users = [m.content for m in request.messages if m.role == "user"]
    return reply("saw: " + " | ".join(users))

chat = ChatWidget(Agent(ScriptedModel(echo), tools=[], store=Path("branches-history.db")))
chat
"""


@pytest.fixture(scope="module")
def page(browser: Any, jupyterlab: Any) -> Iterator[Any]:
    write_notebook(jupyterlab.root, "branches.ipynb", SETUP)
    yield from chat_page(browser, jupyterlab.notebook_url("branches.ipynb"))


def answers(chat: Chat) -> list[str]:
    return [
        a.strip()
        for a in chat.root.locator(".nbagent-chat-transcript .nba-answer").all_inner_texts()
    ]


def test_edit_a_message_and_switch_between_branches(page: Any, artifacts: Any) -> None:
    chat = Chat(page)
    for n, text in enumerate(("one", "two", "three")):
        chat.textarea.fill(text)
        chat.textarea.press("Enter")
        chat.turns.nth(n).locator(".nba-answer", has_text="saw:").wait_for()
        chat.wait_status("Ready")
    assert answers(chat)[-1] == "saw: one | two | three"

    # Edit the second message: the box takes it, Enter sends it as a branch.
    chat.root.locator(".nbagent-turn-view").nth(1).locator("button.nbagent-turn-edit").click()
    assert chat.textarea.input_value() == "two"
    assert chat.root.locator(".nbagent-chat-editing").is_visible()
    chat.textarea.fill("TWO")
    chat.textarea.press("Enter")
    label = chat.root.locator(".nbagent-turn-view").nth(1).locator(".nbagent-branch-label")
    label.wait_for()
    assert label.inner_text() == "2/2"
    chat.wait_status("Ready")
    assert answers(chat) == ["saw: one", "saw: one | TWO"]
    assert not chat.root.locator(".nbagent-chat-editing").is_visible()
    chat.root.screenshot(path=str(artifacts / "lab-chat-branch.png"))

    # "‹" brings back the original branch, its third turn included.
    chat.root.locator(".nbagent-turn-view").nth(1).locator("button.nbagent-branch-previous").click()
    chat.turns.nth(2).wait_for()
    assert (
        chat.root.locator(".nbagent-turn-view").nth(1).locator(".nbagent-branch-label").inner_text()
        == "1/2"
    )
    assert answers(chat) == ["saw: one", "saw: one | two", "saw: one | two | three"]
    # And "›" goes to the edit again.
    chat.root.locator(".nbagent-turn-view").nth(1).locator("button.nbagent-branch-next").click()
    page.wait_for_function(
        "(el) => el.querySelectorAll('.nbagent-chat-transcript .nbagent-turn').length === 2",
        arg=chat.root.element_handle(),
    )
    assert answers(chat) == ["saw: one", "saw: one | TWO"]

    # Regenerate answers the last message again: a third branch at that message.
    chat.root.locator("button.nbagent-chat-regenerate").click()
    page.wait_for_function(
        "(el) => [...el.querySelectorAll('.nbagent-branch-label')]"
        ".some(n => n.textContent === '3/3')",
        arg=chat.root.element_handle(),
    )
    chat.wait_status("Ready")
