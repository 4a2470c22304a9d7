"""Context into the chat, in a real JupyterLab: an @variable mention, images and figures.

Typing "@sa" lists the kernel's matching variables; Tab completes the name; the
message shows it as a chip and the model receives the variable as a {name} field
would send it. A PNG pasted into the box is sent with the next message, and so is
a matplotlib figure picked by name ("@fig..."), drawn by the kernel when picked.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.chat_page import Chat, chat_page, write_notebook

SETUP = r"""
import matplotlib.pyplot as plt
import pandas as pd
from nbagent import Agent, ChatWidget, tool
from nbagent.testing import ScriptedModel, call, reply

sales_by_region = {"north": 10, "south": 20}
fig_sales, ax = plt.subplots(figsize=(4, 3), dpi=50)
ax.plot([10, 20, 15])
plt.close(fig_sales)  # not shown in the cell: attached from the chat by name

@tool(register=False)
def region_table() -> pd.DataFrame:
    '''The regions as a table.'''
    return pd.DataFrame({"region": ["north", "south"], "sales": [10, 20]})

def echo(request):
    user = [m for m in request.request.messages if m.role == "user"][-1]
    if "table" in user.content and not request.tool_results:
        return reply(calls=[call("region_table")])
    sizes = [(i.media_type, i.width, i.height) for i in user.images]
    return reply(f"got {user.content!r} with {len(user.images)} image(s) {sizes}")

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
    option = chat.suggest("Total of @sa", "@sales_by_region")
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


def test_attach_a_figure_by_name(page: Any) -> None:
    chat = Chat(page)
    option = chat.suggest("What trend is in @fig_s", "@fig_sales")
    assert "Figure (attach as image)" in option.inner_text()
    chat.textarea.press("Tab")
    assert chat.textarea.input_value() == "What trend is in "
    chip = chat.root.locator(".nbagent-chat-attachment", has_text="fig_sales · PNG 200×150")
    chip.wait_for()
    assert chip.locator("img.nbagent-chat-thumb").evaluate("(img) => img.naturalWidth") == 64
    chat.textarea.press_sequentially("this figure?")
    chat.textarea.press("Enter")
    answer = chat.turns.nth(3).locator(".nba-answer")
    answer.wait_for()
    assert "with 1 image(s) [('image/png', 200, 150)]" in answer.inner_text()
    assert "Attached: PNG 200×150" in chat.turns.nth(3).inner_text()
    assert chat.root.locator(".nbagent-chat-attachment").count() == 0


def test_mention_chip_is_readable_in_both_themes(page: Any, contrast: Any) -> None:
    chip = Chat(page).turns.nth(0).locator(".nbagent-chip")
    ratios = {}
    for theme, light in (("JupyterLab Dark", "false"), ("JupyterLab Light", "true")):
        page.locator(".lm-MenuBar-itemLabel").get_by_text("Settings", exact=True).click()
        page.locator(".lm-Menu-itemLabel").get_by_text("Theme", exact=True).click()
        page.locator(".lm-Menu-itemLabel").get_by_text(theme, exact=True).click()
        page.wait_for_function(f"document.body.dataset.jpThemeLight === '{light}'")
        page.wait_for_function(  # the theme's stylesheet applied to the chat
            "([el, light]) => (getComputedStyle(el).backgroundColor === 'rgb(255, 255, 255)')"
            " === (light === 'true')",
            arg=[page.locator(".nbagent-chat-scroller").element_handle(), light],
        )
        ratios[theme] = round(contrast(chip), 1)
    assert min(ratios.values()) >= 4.5, f"the @mention chip is hard to read: {ratios}"
