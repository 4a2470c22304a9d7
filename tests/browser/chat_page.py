"""The chat widget in a real JupyterLab page: shared by the chat's browser tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat


class Chat:
    """The chat widget drawn in cell ``cell`` of the open notebook."""

    def __init__(self, page: Any, cell: int = 0) -> None:
        self.page = page
        self.root = page.locator(".jp-Notebook .jp-Cell").nth(cell).locator(".nbagent-chat")
        self.textarea = self.root.locator("textarea")
        self.status = self.root.locator(".nbagent-chat-status")
        self.turns = self.root.locator(".nbagent-turn")

    def suggest(self, typed: str, name: str) -> Any:
        """Type ``typed`` into the box and wait for the suggestion naming ``name``; its option."""
        self.textarea.click()
        self.textarea.press_sequentially(typed)
        option = self.root.locator(".nbagent-chat-suggestion", has_text=name)
        option.wait_for()
        return option

    def wait_status(self, text: str, timeout: float = 30_000) -> None:
        self.page.wait_for_function(
            "([el, text]) => el.textContent.trim() === text",
            arg=[self.status.element_handle(), text],
            timeout=timeout,
        )


def write_notebook(root: Path, name: str, setup: str) -> str:
    """Write notebook ``name`` under ``root`` with one code cell, ``setup``; returns ``name``."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(setup.strip())]
    nbformat.write(nb, root / name)
    return name


def open_lab(page: Any, url: str) -> None:
    page.goto(url)
    page.locator(".jp-Notebook").wait_for()
    page.get_by_text("| Idle").first.wait_for(timeout=120_000)


def chat_page(
    browser: Any,
    url: str,
    *,
    accept_dialogs: bool = True,
    open_page: Callable[[Any, str], None] = open_lab,
) -> Iterator[Any]:
    """A page with the notebook at ``url`` open and all its cells run, once its chat is drawn.

    ``accept_dialogs`` accepts JupyterLab's "leave page?" on reloads; a test that answers
    the chat's own prompts itself turns it off. ``open_page(page, url)`` opens the
    notebook until its kernel is idle (JupyterLab's by default).
    """
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(60_000)
    if accept_dialogs:
        page.on("dialog", lambda dialog: dialog.accept())
    open_page(page, url)
    page.locator(".lm-MenuBar-itemLabel").get_by_text("Run", exact=True).click()
    page.locator(".lm-Menu-itemLabel").get_by_text("Run All Cells", exact=True).click()
    Chat(page).textarea.wait_for(timeout=120_000)
    yield page
    context.close()


def saved_cells(page: Any, path: Path, timeout: float = 30.0) -> list[tuple[str, list[Any], Any]]:
    """Save the open notebook (Ctrl+S in command mode); ``(source, outputs, count)`` per cell.

    Waits for the file to change on disk: the notebook as a user would reopen it.
    """
    import time

    before = path.stat().st_mtime_ns
    page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-InputPrompt").click()
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + timeout
    notebook = None
    while notebook is None:
        if time.monotonic() > deadline:
            raise AssertionError(f"{path.name} was not saved within {timeout} s")
        time.sleep(0.1)
        if path.stat().st_mtime_ns != before:
            try:
                notebook = nbformat.read(path, as_version=4)
            except ValueError:  # caught mid-write: read it again
                notebook = None
    return [
        (cell.source, cell.get("outputs", []), cell.get("execution_count"))
        for cell in notebook.cells
    ]
