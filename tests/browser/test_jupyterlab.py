"""The notebook surfaces end to end in a real JupyterLab, driven in headless Chromium.

A temporary notebook defines tools, a ChatWidget and a %%agent cell on a
ScriptedModel; the test runs it in a real kernel through the JupyterLab UI,
types into the widget, clicks its buttons and reads the rendered DOM.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest

SETUP = r'''
import pandas as pd
import nbagent.magic
from nbagent import Agent, ChatWidget, tool
from nbagent.testing import ScriptedModel, call, reply

%load_ext nbagent

@tool
def city_table(n: int = 12) -> pd.DataFrame:
    """A table of cities and temperatures."""
    return pd.DataFrame({"city": [f"city{i}" for i in range(n)], "temp": range(n)})

@tool
def fetch_page(url: str) -> str:
    """Fetch a web page."""
    return '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'

deleted = []

@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    deleted.append(path)
    return f"deleted {path}"

def script(request):
    prompt = request.prompt
    if "slow" in prompt:
        # 36,000 characters (minutes at this speed), with a payload in the live text.
        payload = '<img src=x onerror="window.__pwned = 6"> '
        return "lorem ipsum " * 5 + payload + "lorem ipsum " * 3000
    if "delete" in prompt:
        if request.round_index == 0:
            return reply(calls=[call("delete_file", path="/tmp/report.csv")])
        return reply("Result: " + request.tool_results[-1].content)
    if request.round_index == 0:
        return reply(
            "Checking the table.",
            calls=[call("city_table", n=12), call("fetch_page", url="javascript:alert(1)")],
        )
    return reply(
        'The table has **12 rows**. <img src=x onerror="window.__pwned = 3"> '
        "[more](javascript:window.__pwned=4) <script>window.__pwned = 5</script>"
    )

model = ScriptedModel(script, chunk_size=4, delay=0.02)
chat = ChatWidget(Agent(model, tools=[city_table, fetch_page, delete_file]))
chat
'''

MAGIC = r"""%%agent
How warm are the cities?"""

MAGIC_SETUP = r"""
magic_model = ScriptedModel(script, chunk_size=4, delay=0.01)
nbagent.magic.use(Agent(magic_model, tools=[city_table, fetch_page]))
"""

SHIFT_CHAT = r"""
echo = ChatWidget(Agent(ScriptedModel(lambda r: "echo: " + r.prompt), tools=[]),
                  send_on="shift-enter")
echo
"""


@pytest.fixture(scope="module")
def notebook(jupyterlab: Any) -> str:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    nb.cells = [
        nbformat.v4.new_code_cell(SETUP.strip()),
        nbformat.v4.new_code_cell(MAGIC_SETUP.strip()),
        nbformat.v4.new_code_cell(MAGIC),
        nbformat.v4.new_code_cell(SHIFT_CHAT.strip()),
    ]
    nbformat.write(nb, jupyterlab.root / "chat.ipynb")
    return "chat.ipynb"


class Notebook:
    """The chat notebook running in JupyterLab: the page and what it did behind our back."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        page.on("dialog", self._dialog)
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.cells = page.locator(".jp-Notebook .jp-Cell")
        self.chat = self.cells.nth(0).locator(".nbagent-chat")
        self.textarea = self.chat.locator(".nbagent-chat-input textarea")
        self.status = self.chat.locator(".nbagent-chat-status")
        self.turns = self.chat.locator(".nbagent-turn")

    def _dialog(self, dialog: Any) -> None:
        if dialog.type == "beforeunload":  # JupyterLab's own "leave page?" on reload
            dialog.accept()
            return
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def button(self, name: str) -> Any:
        return self.chat.locator(f"button.nbagent-chat-{name}")

    def wait_status(self, text: str, timeout: float = 30_000) -> None:
        self.page.wait_for_function(
            "([el, text]) => el.textContent.trim() === text",
            arg=[self.status.element_handle(), text],
            timeout=timeout,
        )

    def assert_nothing_ran(self) -> None:
        assert self.page.evaluate("typeof window.__pwned") == "undefined"
        assert self.dialogs == []
        assert self.page.locator(".nbagent-out script, .nbagent-turn script").count() == 0
        assert self.page.locator(".nbagent-out [onerror], .nbagent-turn [onerror]").count() == 0


@pytest.fixture(scope="module")
def lab(browser: Any, jupyterlab: Any, notebook: str, artifacts: Path) -> Any:
    """The notebook opened in JupyterLab with all its cells run."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(60_000)
    nb = Notebook(page)
    page.goto(jupyterlab.notebook_url(notebook))
    page.locator(".jp-Notebook").wait_for()
    page.get_by_text("| Idle").first.wait_for(timeout=120_000)  # kernel started
    page.locator('.jp-SideBar [data-id="filebrowser"]').click()  # more room for output
    page.locator(".lm-MenuBar-itemLabel").get_by_text("Run", exact=True).click()
    page.locator(".lm-Menu-itemLabel").get_by_text("Run All Cells", exact=True).click()
    nb.chat.wait_for(timeout=120_000)
    nb.status.wait_for()
    nb.cells.nth(3).locator(".nbagent-chat").wait_for(timeout=120_000)
    yield nb
    page.screenshot(path=str(artifacts / "lab-final.png"))
    context.close()


def test_enter_sends_and_panels_and_answer_appear(lab: Notebook, artifacts: Path) -> None:
    page = lab.page
    # The ES module front end drew the widget (anywidget's lab extension loaded it).
    lab.textarea.wait_for()
    assert lab.chat.locator("[role=log]").count() == 1
    assert lab.status.inner_text() == "Ready"
    lab.textarea.fill("How many cities?")
    lab.textarea.press("Enter")

    turn = lab.turns.nth(0)
    turn.locator(".nba-answer", has_text="12 rows").wait_for(timeout=30_000)
    lab.wait_status("Ready")
    assert lab.textarea.input_value() == ""
    assert turn.locator(".nbagent-user").inner_text().endswith("How many cities?")
    assert turn.locator(".nba-answer strong").inner_text() == "12 rows"

    panel = turn.locator("details.nba-round")
    assert panel.count() == 1
    assert "Round 1 · city_table, fetch_page · ok" in panel.locator(":scope > summary").inner_text()
    assert panel.evaluate("d => d.open") is False
    table = panel.locator("table.nba-table")
    assert not table.is_visible()
    panel.locator(":scope > summary").click()
    assert table.is_visible()
    assert table.locator("tbody tr").count() == 10
    assert "12 rows × 2 columns (first 10 shown)" in panel.inner_text()
    # Tool and model payloads are visible as text and did nothing.
    assert '<img src=x onerror="window.__pwned = 2">' in panel.inner_text()
    assert "<script>window.__pwned = 5</script>" in turn.locator(".nba-answer").inner_text()
    page.wait_for_timeout(300)
    lab.assert_nothing_ran()
    lab.chat.screenshot(path=str(artifacts / "lab-chat-answer.png"))


def test_shift_enter_is_a_newline_and_send_button_sends(lab: Notebook) -> None:
    page = lab.page
    before = lab.turns.count()
    prompt_count = page.locator(".jp-InputPrompt").first.inner_text()
    lab.textarea.click()
    page.keyboard.type("line one")
    page.keyboard.press("Shift+Enter")  # would run the cell in a notebook; here a newline
    page.keyboard.type("line two")
    assert lab.textarea.input_value() == "line one\nline two"
    page.wait_for_timeout(300)
    assert lab.turns.count() == before
    assert page.locator(".jp-InputPrompt").first.inner_text() == prompt_count  # cell not re-run

    lab.button("send").click()
    lab.turns.nth(before).locator(".nba-answer", has_text="12 rows").wait_for(timeout=30_000)
    assert (
        lab.turns.nth(before).locator(".nbagent-user").inner_text().endswith("line one\nline two")
    )
    lab.wait_status("Ready")
    assert lab.textarea.input_value() == ""


def test_stop_during_a_slow_stream(lab: Notebook, artifacts: Path) -> None:
    page = lab.page
    before = lab.turns.count()
    lab.textarea.fill("please be slow")
    lab.textarea.press("Enter")
    turn = lab.turns.nth(before)
    stream = turn.locator(".nba-stream", has_text="onerror")
    stream.wait_for(timeout=30_000)  # the live (not yet final) rendering is escaped too
    assert '<img src=x onerror="window.__pwned = 6">' in stream.inner_text()
    lab.assert_nothing_ran()
    assert lab.button("send").is_disabled() and lab.button("stop").is_enabled()
    # The generation is a task on the kernel's loop: the kernel itself is idle.
    assert page.get_by_text("| Idle").count() >= 1
    lab.chat.screenshot(path=str(artifacts / "lab-chat-streaming.png"))

    started = page.evaluate("performance.now()")
    lab.button("stop").click()
    lab.wait_status("Stopped: cancelled", timeout=10_000)
    elapsed_ms = page.evaluate("performance.now()") - started
    print(f"Stop click -> 'Stopped: cancelled' shown: {elapsed_ms:.0f} ms")
    assert elapsed_ms < 1000

    footer = turn.locator(".nba-footer")
    assert "stopped: cancelled" in footer.inner_text()
    partial = turn.locator(".nba-answer").inner_text()
    assert partial.startswith("lorem ipsum") and "[run cancelled]" in partial
    assert len(partial) < len("lorem ipsum " * 3000)
    lab.assert_nothing_ran()
    assert lab.button("send").is_enabled() and lab.button("stop").is_disabled()
    # The transcript scrolls with the conversation: the newest footer is in view.
    scroller = lab.chat.locator(".nbagent-chat-scroller").bounding_box()
    box = footer.bounding_box()
    assert scroller is not None and box is not None
    assert (
        scroller["y"] <= box["y"]
        and box["y"] + box["height"] <= scroller["y"] + scroller["height"] + 1
    )
    lab.chat.screenshot(path=str(artifacts / "lab-chat-stopped.png"))


def test_approve_button_runs_the_tool(lab: Notebook, artifacts: Path) -> None:
    before = lab.turns.count()
    lab.textarea.fill("delete the report")  # the conversation goes on after the Stop
    lab.textarea.press("Enter")
    row = lab.chat.locator(".nbagent-chat-approval")
    row.wait_for(timeout=30_000)
    assert row.locator(".nbagent-chat-question").inner_text() == (
        'Allow delete_file(path="/tmp/report.csv")?'
    )
    lab.wait_status("Waiting for approval: delete_file")
    lab.chat.screenshot(path=str(artifacts / "lab-chat-approval.png"))

    row.locator("button", has_text="Approve").click()
    turn = lab.turns.nth(before)
    turn.locator(".nba-answer", has_text="Result: deleted /tmp/report.csv").wait_for(timeout=30_000)
    assert row.count() == 0
    assert "approved by user" in turn.locator("details.nba-round").text_content()
    lab.assert_nothing_ran()

    # "Always allow this tool": the next call runs without asking; the chip revokes it.
    lab.textarea.fill("delete it again")
    lab.textarea.press("Enter")
    row.locator("button", has_text="Always allow this tool").click()
    lab.turns.nth(before + 1).locator(".nba-answer", has_text="Result: deleted").wait_for()
    chip = lab.chat.locator("button.nbagent-chat-revoke")
    assert chip.inner_text() == "delete_file ×"
    lab.textarea.fill("delete more")
    lab.textarea.press("Enter")
    lab.turns.nth(before + 2).locator(".nba-answer", has_text="Result: deleted").wait_for()
    assert row.count() == 0
    assert "always allowed in this chat" in lab.turns.nth(before + 2).text_content()
    chip.click()
    chip.wait_for(state="detached")


def test_new_chat_button_clears_the_transcript(lab: Notebook) -> None:
    assert lab.turns.count() == 6
    lab.button("new").click()
    lab.wait_status("New chat")
    assert lab.turns.count() == 0
    lab.textarea.fill("How many cities?")
    lab.textarea.press("Enter")
    lab.turns.nth(0).locator(".nba-answer", has_text="12 rows").wait_for(timeout=30_000)
    assert lab.turns.count() == 1


def test_agent_magic_cell_panels(lab: Notebook, artifacts: Path) -> None:
    cell = lab.cells.nth(2)
    output = cell.locator(".jp-OutputArea-output .nbagent-out")
    output.locator(".nba-answer", has_text="12 rows").wait_for(timeout=60_000)
    panel = output.locator("details.nba-round")
    assert panel.count() == 1 and panel.evaluate("d => d.open") is False
    panel.locator(":scope > summary").click()
    table = panel.locator("table.nba-table")
    assert table.is_visible() and table.locator("tbody tr").count() == 10
    assert '<img src=x onerror="window.__pwned = 2">' in panel.inner_text()
    cell.scroll_into_view_if_needed()
    cell.screenshot(path=str(artifacts / "lab-magic-panel.png"))
    lab.assert_nothing_ran()


def test_send_on_shift_enter_reverses_the_keys(lab: Notebook, artifacts: Path) -> None:
    page = lab.page
    echo = lab.cells.nth(3).locator(".nbagent-chat")
    echo.scroll_into_view_if_needed()
    area = echo.locator(".nbagent-chat-input textarea")
    area.click()
    page.keyboard.type("first")
    page.keyboard.press("Enter")  # a newline in this mode
    page.keyboard.type("second")
    assert area.input_value() == "first\nsecond"
    page.keyboard.press("Shift+Enter")  # sends (and does not run the cell)
    answer = echo.locator(".nbagent-turn .nba-answer")
    answer.wait_for(timeout=30_000)
    assert answer.inner_text().strip() == "echo: first second"  # Markdown soft break
    assert echo.locator(".nbagent-user").inner_text().endswith("first\nsecond")
    assert area.input_value() == ""
    assert echo.locator(".nbagent-turn").count() == 1


def test_dark_theme_keeps_the_chat_readable(lab: Notebook, artifacts: Path, contrast: Any) -> None:
    page = lab.page
    page.locator(".lm-MenuBar-itemLabel").get_by_text("Settings", exact=True).click()
    page.locator(".lm-Menu-itemLabel").get_by_text("Theme", exact=True).click()
    page.locator(".lm-Menu-itemLabel").get_by_text("JupyterLab Dark", exact=True).click()
    page.wait_for_function("document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
    page.wait_for_timeout(500)  # theme stylesheet applied
    turn = lab.turns.nth(0)
    turn.locator("details.nba-round > summary").click()
    low = {}
    for selector in (
        ".nbagent-user",
        ".nba-answer p",
        "details.nba-round > summary",
        "table.nba-table td",
        ".nba-body pre",
    ):
        element = turn.locator(selector).first
        ratio = contrast(element)
        if ratio < 4.5:
            low[selector] = round(ratio, 2)
    for selector in (".nbagent-chat-status", ".nbagent-chat-input textarea"):
        ratio = contrast(lab.chat.locator(selector))
        if ratio < 4.5:
            low[selector] = round(ratio, 2)
    lab.chat.screenshot(path=str(artifacts / "lab-chat-dark.png"))
    assert low == {}, f"too little contrast in JupyterLab Dark: {low}"


def test_magic_output_survives_save_and_reload(
    lab: Notebook, jupyterlab: Any, notebook: str, artifacts: Path
) -> None:
    page = lab.page
    lab.cells.nth(1).click()  # command mode on a cell, not inside a widget's text area
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    html = ""
    for _ in range(300):  # the file on disk, once JupyterLab has written it
        try:
            saved = nbformat.read(jupyterlab.root / notebook, as_version=4)
        except nbformat.reader.NotJSONError:  # caught mid-write (empty or partial file)
            page.wait_for_timeout(100)
            continue
        html = "".join(o.get("data", {}).get("text/html", "") for o in saved.cells[2].outputs)
        if html:
            break
        page.wait_for_timeout(100)
    assert 'class="nba-round"' in html and "12 rows" in html
    assert any("text/markdown" in o.get("data", {}) for o in saved.cells[2].outputs)

    page.reload(wait_until="domcontentloaded")
    page.locator(".jp-Notebook").wait_for()
    output = lab.cells.nth(2).locator(".jp-OutputArea-output .nbagent-out")
    output.locator(".nba-answer", has_text="12 rows").wait_for(timeout=60_000)
    panel = output.locator("details.nba-round")
    assert panel.evaluate("d => d.open") is False
    panel.locator(":scope > summary").click()
    assert panel.locator("table.nba-table tbody tr").count() == 10
    page.wait_for_timeout(300)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert lab.dialogs == []
    lab.cells.nth(2).screenshot(path=str(artifacts / "lab-magic-after-reload.png"))
