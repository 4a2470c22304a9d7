"""Context into the chat, in a real JupyterLab: an @variable mention and a pasted image.

Typing "@sa" lists the kernel's matching variables; Tab completes the name; the
message shows it as a chip and the model receives the variable as a {name} field
would send it. A PNG pasted into the box is sent with the next message.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.chat_page import Chat, chat_page, write_notebook

SETUP = r"""
import pandas as pd
from nbagent import Agent, ChatWidget, tool
from nbagent.testing import ScriptedModel, call, reply

sales_by_region = {"north": 10, "south": 20}

@tool(register=False)
def region_table() -> pd.DataFrame:
    '''The regions as a table.'''
    return pd.DataFrame({"region": ["north", "south"], "sales": [10, 20]})

def echo(request):
    user = [m for m in request.request.messages if m.role == "user"][-1]
    if "table" in user.content and not request.tool_results:
        return reply(calls=[call("region_table")])
    return reply(f"got {user.content!r} with {len(user.images)} image(s)")

chat = ChatWidget(Agent(ScriptedModel(echo), tools=[region_table], store=None))
chat
"""


def png_base64() -> str:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (12, 8), (10, 200, 10)).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


@pytest.fixture(scope="module")
def page(browser: Any, jupyterlab: Any) -> Iterator[Any]:
    write_notebook(jupyterlab.root, "context.ipynb", SETUP)
    yield from chat_page(browser, jupyterlab.notebook_url("context.ipynb"), accept_dialogs=False)


def test_mention_a_variable_with_autocomplete(page: Any, artifacts: Any) -> None:
    chat = Chat(page)
    chat.textarea.click()
    chat.textarea.press_sequentially("Total of @sa")
    option = chat.root.locator(".nbagent-chat-suggestion", has_text="@sales_by_region")
    option.wait_for()
    assert "dict" in option.inner_text()
    chat.textarea.press("Tab")
    assert chat.textarea.input_value() == "Total of @sales_by_region "
    assert not chat.root.locator(".nbagent-chat-suggestions").is_visible()
    chat.root.screenshot(path=str(artifacts / "lab-chat-mention.png"))
    chat.textarea.press("Enter")
    answer = chat.turns.nth(0).locator(".nba-answer")
    answer.wait_for()
    assert "'north': 10" in answer.inner_text() and "@sales" not in answer.inner_text()
    chip = chat.turns.nth(0).locator(".nbagent-chip")
    assert chip.inner_text() == "@sales_by_region"
    chat.wait_status("Ready")


def test_paste_an_image(page: Any) -> None:
    chat = Chat(page)
    chat.textarea.click()
    page.evaluate(
        """([area, data]) => {
            const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
            const transfer = new DataTransfer();
            transfer.items.add(new File([bytes], "shot.png", { type: "image/png" }));
            area.dispatchEvent(new ClipboardEvent("paste", {
                clipboardData: transfer, bubbles: true, cancelable: true }));
        }""",
        [chat.textarea.element_handle(), png_base64()],
    )
    chip = chat.root.locator(".nbagent-chat-attachment", has_text="PNG 12×8")
    chip.wait_for()
    chat.textarea.fill("what is this")
    chat.textarea.press("Enter")
    answer = chat.turns.nth(1).locator(".nba-answer")
    answer.wait_for()
    assert "with 1 image(s)" in answer.inner_text()
    assert chat.root.locator(".nbagent-chat-attachment").count() == 0


def test_put_a_dataframe_in_a_variable_and_change_the_limits(page: Any) -> None:
    chat = Chat(page)
    chat.textarea.fill("the table please")
    chat.textarea.press("Enter")
    put = chat.turns.nth(2).locator("button.nbagent-card-put")
    put.wait_for()
    page.once("dialog", lambda dialog: dialog.accept("regions"))
    put.click()
    chat.wait_status("regions = the DataFrame from " + put.get_attribute("data-call-id"))
    rounds = chat.root.locator("input.nbagent-chat-max-rounds")
    assert rounds.input_value() == "10"
    rounds.fill("-1")
    rounds.press("Enter")  # change fires; the kernel refuses it and says why
    page.wait_for_function(
        "(el) => el.textContent.includes('max_rounds')", arg=chat.status.element_handle()
    )
    chat.textarea.fill("@regi")
    chat.root.locator(".nbagent-chat-suggestion", has_text="@regions").wait_for()
    assert "DataFrame" in chat.root.locator(".nbagent-chat-suggestion").first.inner_text()
    chat.textarea.fill("")
