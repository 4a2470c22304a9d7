"""``%%agent --over`` in JupyterLab: the live progress panel, then the summary with failures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

SETUP = r'''
%load_ext nbagent
import pandas as pd
import nbagent
from nbagent import Agent, tool
from nbagent.testing import ScriptedModel, call, reply

@tool
def check(word: str) -> str:
    """Check a word."""
    if word.startswith("bad"):
        raise ValueError('<img src=x onerror="window.__pwned = 1"> is not a word')
    return "fine"

def script(request):
    word = [m for m in request.messages if m.role == "user"][0].content.split()[-1]
    if not request.tool_results:
        return reply(calls=[call("check", word=word)])
    return "checked " + word

import tempfile
# A history of the notebook's own: the lab's kernel must not journal into anyone's home.
HISTORY = tempfile.mkdtemp() + "/history.db"
nbagent.magic.use(Agent(ScriptedModel(script, delay=0.03), tools=[check], max_consecutive_errors=1,
                        store=HISTORY))
words = pd.DataFrame({"word": [f"bad{i}" if i % 50 == 7 else f"w{i}" for i in range(160)]})
'''

OVER = """%%agent --over words --into checked --concurrency 4
Check the word {word}"""


@pytest.fixture(scope="module")
def page(browser: Any, jupyterlab: Any, artifacts: Path) -> Iterator[Any]:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(SETUP.strip()), nbformat.v4.new_code_cell(OVER)]
    nbformat.write(nb, jupyterlab.root / "batch.ipynb")
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(60_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(jupyterlab.notebook_url("batch.ipynb"))
    page.locator(".jp-Notebook").wait_for()
    page.get_by_text("| Idle").first.wait_for(timeout=120_000)
    page.locator(".lm-MenuBar-itemLabel").get_by_text("Run", exact=True).click()
    page.locator(".lm-Menu-itemLabel").get_by_text("Run All Cells", exact=True).click()
    page.errors = errors
    yield page
    page.screenshot(path=str(artifacts / "lab-batch.png"))
    context.close()


def test_progress_updates_live_then_the_summary_opens_onto_a_failed_rows_rounds(
    page: Any, artifacts: Path
) -> None:
    cell = page.locator(".jp-Notebook .jp-Cell").nth(1)
    line = cell.locator(".nbagent-map-line")
    line.wait_for(timeout=120_000)
    summary = cell.locator(".nbagent-map-summary")
    seen = set()
    while summary.count() == 0:  # the same panel, redrawn in place while rows finish
        seen.add(line.inner_text())
        page.wait_for_timeout(100)
    assert len(seen) >= 2 and cell.locator(".nbagent-map").count() == 1
    summary = cell.locator(".nbagent-map-summary")
    summary.wait_for(timeout=120_000)
    # bad7, bad57, bad107 and bad157 fail (their tool raises); the rest are done.
    assert "156 of 160 rows done (0 from the journal), 4 failed" in summary.inner_text()
    assert "4 failed" in line.inner_text() and "160/160" in line.inner_text()
    failure = summary.locator(":scope > details").first
    assert "row 7:" in failure.locator(":scope > summary").inner_text()
    assert failure.evaluate("d => d.open") is False
    failure.locator(":scope > summary").click()
    assert failure.locator("details.nba-round").count() >= 1
    assert '<img src=x onerror="window.__pwned = 1">' in failure.inner_text()
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator(".nbagent-map-summary img, .nbagent-map img").count() == 0
    assert page.errors == []
    cell.scroll_into_view_if_needed()
    cell.screenshot(path=str(artifacts / "lab-batch-summary.png"))
