"""Tutorial 06 in a real JupyterLab (headless Chromium): Run All goes to the end.

- The notebook sets ``NBAGENT_APPROVAL=allow:run_python``: that policy answers in
  JupyterLab too, so no ``[y/N]`` box stops Run All.
- The plot the model draws shows once, in its round panel (not again below the cell).
- A question nobody answers (the page was reloaded, the box is gone) does not leave the
  kernel busy: after ``NBAGENT_APPROVAL_TIMEOUT`` it counts as a denial.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _open(browser: Any, lab: Any, name: str) -> tuple[Any, Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.on("dialog", lambda dialog: dialog.accept())  # JupyterLab's "leave page?" on reload
    page.goto(lab.notebook_url(name))
    page.locator(".jp-Notebook").wait_for()
    page.get_by_text("| Idle").first.wait_for(timeout=120_000)  # the kernel started
    return context, page


def _run_all(page: Any) -> None:
    page.locator(".lm-MenuBar-itemLabel").get_by_text("Run", exact=True).click()
    page.locator(".lm-Menu-itemLabel").get_by_text("Run All Cells", exact=True).click()


def _kernels_idle(lab: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kernels = lab.api("GET", "/api/kernels") or []
        if kernels and all(k["execution_state"] == "idle" for k in kernels):
            return True
        time.sleep(0.5)
    return False


def test_tutorial_06_runs_all_cells_without_asking_and_shows_the_plot_once(
    browser: Any, jupyterlab: Any, artifacts: Path
) -> None:
    nb = nbformat.read(ROOT / "notebooks" / "06_kernel_agent.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.write(nb, jupyterlab.root / "06_kernel_agent.ipynb")
    context, page = _open(browser, jupyterlab, "06_kernel_agent.ipynb")
    try:
        _run_all(page)
        code_cells = page.locator(".jp-Notebook .jp-CodeCell")
        last = code_cells.nth(code_cells.count() - 1)
        # Run All reached the last cell: nothing stopped it (a [y/N] box would).
        last.locator(".jp-InputPrompt", has_text="[").wait_for(timeout=120_000)
        page.wait_for_function(
            "el => /\\[\\d+\\]/.test(el.textContent)",
            arg=last.locator(".jp-InputPrompt").element_handle(),
            timeout=120_000,
        )
        page.screenshot(path=str(artifacts / "lab-tutorial-06.png"), full_page=True)
        assert page.locator(".jp-Stdin-input").count() == 0
        assert (
            page.locator(
                ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
            ).count()
            == 0
        )
        plot = code_cells.filter(has_text="Make a plot of the totals")
        outputs = plot.locator(".jp-OutputArea-output")
        panel = outputs.locator(".nbagent-out")
        assert "approved by policy NBAGENT_APPROVAL=allow:run_python" in panel.text_content()
        # once: the panel's image, and no second image under it
        assert plot.locator(".jp-OutputArea-output img").count() == 1
        assert panel.locator("img.nba-image").count() == 1
    finally:
        context.close()


RELOAD_SETUP = '''
%load_ext nbagent
import os
import nbagent
from nbagent.testing import ScriptedModel, call, reply

os.environ["NBAGENT_APPROVAL_TIMEOUT"] = "4"

@nbagent.tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file."""
    return "deleted " + path

def script(request):
    if request.round_index == 0:
        return reply("", [call("delete", path="/tmp/x")])
    return reply("Answer: " + request.tool_results[-1].content)

nbagent.magic.use(ScriptedModel(script))
'''


def test_a_question_lost_in_a_reload_does_not_leave_the_kernel_busy(
    browser: Any, jupyterlab: Any
) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)"}
    nb.cells = [
        nbformat.v4.new_code_cell(RELOAD_SETUP.strip()),
        nbformat.v4.new_code_cell("%%agent\nDelete /tmp/x please."),
        nbformat.v4.new_code_cell("print(_agent.rounds[0].results[0].approval)"),
    ]
    nbformat.write(nb, jupyterlab.root / "reload.ipynb")
    context, page = _open(browser, jupyterlab, "reload.ipynb")
    try:
        _run_all(page)
        page.locator(".jp-Stdin-input").wait_for(timeout=60_000)  # the [y/N] box
        page.reload()  # the box is gone; the kernel still waits for an answer...
        page.locator(".jp-Notebook").wait_for()
        assert page.locator(".jp-Stdin-input").count() == 0
        # ...until the question times out: the kernel is free again
        assert _kernels_idle(jupyterlab, 60), lab_kernels(jupyterlab)
        last = page.locator(".jp-Notebook .jp-CodeCell").nth(2)
        last.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Shift+Enter")
        last.locator(".jp-OutputArea-output", has_text="denied").wait_for(timeout=60_000)
        assert last.locator(".jp-OutputArea-output").inner_text().strip() == (
            "denied by nobody (no answer in 4 s)"
        )
    finally:
        context.close()


def lab_kernels(lab: Any) -> Any:
    return lab.api("GET", "/api/kernels")


pytestmark = pytest.mark.browser
