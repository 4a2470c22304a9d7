"""Static round panels (render.py output) in a real Chromium: inert, collapsible, readable.

A real run (Agent + ScriptedModel + real tools) produces a RunResult whose model
text and tool results are full of XSS payloads; its HTML is loaded into a page
with the real JupyterLab theme stylesheets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from jupyter_core.paths import jupyter_path
from PIL import Image

from nbagent import Agent, RunResult, tool
from nbagent.render import render_result_html
from nbagent.testing import ScriptedModel, call, reply

# Every payload tries to set window.__pwned (or open a dialog) if it ever runs.
PRE_TEXT = 'Looking... <img src=x onerror="window.__pwned=1"> <!-- model comment -->'
ANSWER = (
    "Here is **the answer**.\n\n"
    "<script>window.__pwned=2</script>\n\n"
    '[click me](javascript:window.__pwned=3) and <a href="javascript:window.__pwned=4">x</a>\n\n'
    '<img src=x onerror="alert(5)"> <!-- answer comment --> <svg onload="window.__pwned=6">'
)
PAGE_TEXT = '<script>window.__pwned=7</script><!-- tool comment --><b onmouseover="alert(8)">b</b>'
PAYLOAD_NAMES = ("__pwned",)


@tool(register=False)
def cities() -> pd.DataFrame:
    """A table of 30 cities."""
    frame = pd.DataFrame({"city": [f"city{i}" for i in range(30)], "temp": range(30)})
    frame.loc[0, "city"] = '<img src=x onerror="window.__pwned=9">'
    return frame.rename(columns={"temp": "<script>window.__pwned=10</script>"})


@tool(register=False)
def fetch_page(url: str) -> str:
    """Fetch a web page."""
    return PAGE_TEXT


@tool(register=False)
def swatch() -> Any:
    """A small picture."""
    return Image.new("RGB", (40, 20), (200, 30, 30))


@tool(register=False)
def explode() -> str:
    """Always fails."""
    raise ValueError('<img src=x onerror="window.__pwned=11">')


def hostile_result() -> RunResult:
    def script(request):
        if request.round_index == 0:
            return reply(PRE_TEXT, calls=[call("cities"), call("fetch_page", url="javascript:x")])
        if request.round_index == 1:
            return reply(calls=[call("swatch"), call("explode")])
        return reply(ANSWER)

    agent = Agent(ScriptedModel(script), tools=[cities, fetch_page, swatch, explode])
    return agent.run_sync("Show me <script>window.__pwned=12</script>")


def theme_css(name: str) -> str:
    for base in jupyter_path("lab"):
        path = Path(base, "themes", "@jupyterlab", name, "index.css")
        if path.exists():
            return path.read_text()
    raise AssertionError(f"JupyterLab theme {name} not installed")


THEMES = {
    # Real JupyterLab stylesheets define the --jp-* variables render.py uses.
    "jupyterlab-light": (theme_css("theme-light-extension"), "var(--jp-layout-color0)"),
    "jupyterlab-dark": (theme_css("theme-dark-extension"), "var(--jp-layout-color0)"),
    # No --jp-* variables at all (nbconvert HTML / GitHub / VS Code dark): fallbacks only.
    "bare-dark": ("", "#1e1e1e; color: #d4d4d4"),
}


@pytest.fixture(scope="module")
def result_html() -> str:
    return render_result_html(hostile_result())


def load(watched: Any, html: str, theme: str) -> Any:
    css, background = THEMES[theme]
    page = watched.page
    page.set_content(
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<style>{css}</style><style>body {{ background: {background}; margin: 16px; }}</style>"
        f"</head><body><div id='out'>{html}</div></body></html>"
    )
    return page


def assert_nothing_ran(watched: Any) -> None:
    page = watched.page
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert watched.dialogs == []
    assert watched.errors == []
    # Only our own (data: PNG) image loads; no request to a payload's "x".
    assert [u for u in watched.requests if not u.startswith(("data:", "about:"))] == []


def test_hostile_content_stays_inert(watched_page: Any, result_html: str, artifacts: Path) -> None:
    page = load(watched_page, result_html, "jupyterlab-light")
    for summary in page.locator("details.nba-round > summary").all():
        summary.click()  # open everything, hover over everything
        summary.hover()
    page.locator("#out").hover()
    page.wait_for_timeout(300)  # give any smuggled onerror/onload a chance to fire

    assert_nothing_ran(watched_page)
    counts = page.evaluate(
        """() => ({
          scripts: document.querySelectorAll('#out script').length,
          handlers: [...document.querySelectorAll('#out *')].filter(
              (e) => [...e.attributes].some((a) => a.name.startsWith('on'))).length,
          jsLinks: [...document.querySelectorAll('#out a[href]')].filter(
              (a) => !/^https?:|^#|^mailto:/i.test(a.getAttribute('href'))).length,
          comments: (() => { const w = document.createTreeWalker(
              document.getElementById('out'), NodeFilter.SHOW_COMMENT); let n = 0;
              while (w.nextNode()) n++; return n; })(),
          images: [...document.querySelectorAll('#out img')].map((i) => i.src.slice(0, 22)),
        })"""
    )
    assert counts["scripts"] == 0
    assert counts["handlers"] == 0
    assert counts["jsLinks"] == 0
    assert counts["comments"] == 0
    assert counts["images"] == ["data:image/png;base64,"]  # the swatch, nothing else
    # The payloads are shown as text, so the user can see what the model tried.
    text = page.inner_text("#out")
    assert "<script>window.__pwned=7</script>" in text
    assert '<img src=x onerror="window.__pwned=1">' in text
    assert "<!-- answer comment -->" in text
    page.screenshot(path=str(artifacts / "panels-xss-inert.png"), full_page=True)


def test_panels_collapsed_then_open_with_table_and_image(
    watched_page: Any, result_html: str, artifacts: Path
) -> None:
    page = load(watched_page, result_html, "jupyterlab-light")
    panels = page.locator("details.nba-round")
    assert panels.count() == 2
    opened = "[...document.querySelectorAll('details.nba-round')].map(d => d.open)"
    assert page.evaluate(opened) == [False, False]
    first = panels.nth(0)
    assert "Round 1" in first.locator(":scope > summary").inner_text()
    assert "cities, fetch_page" in first.locator(":scope > summary").inner_text()
    table = first.locator("table.nba-table")
    assert not table.is_visible()
    page.screenshot(path=str(artifacts / "panels-collapsed.png"), full_page=True)

    first.locator(":scope > summary").click()
    assert first.evaluate("d => d.open") is True
    assert table.is_visible()
    assert table.locator("tbody tr").count() == 10
    assert "30 rows × 2 columns (first 10 shown)" in first.inner_text()
    assert table.locator("tbody tr").nth(1).inner_text().split() == ["1", "city1", "1"]

    second = panels.nth(1)
    assert "error" in second.locator(":scope > summary").inner_text()
    second.locator(":scope > summary").click()
    image = second.locator("img.nba-image")
    assert image.is_visible()
    assert image.evaluate("i => [i.complete, i.naturalWidth, i.naturalHeight]") == [True, 40, 20]
    error = second.locator(".nba-error")
    assert error.is_visible() and "ValueError" in error.inner_text()
    # The traceback is its own collapsed <details> inside the error.
    traceback = error.locator("details")
    assert traceback.evaluate("d => d.open") is False
    traceback.locator("summary").click()
    assert "Traceback (most recent call last)" in traceback.inner_text()
    assert page.locator(".nba-answer strong").inner_text() == "the answer"
    page.screenshot(path=str(artifacts / "panels-open.png"), full_page=True)
    assert_nothing_ran(watched_page)


@pytest.mark.parametrize("theme", list(THEMES))
def test_readable_in_light_and_dark(
    watched_page: Any, result_html: str, artifacts: Path, theme: str, contrast: Any
) -> None:
    page = load(watched_page, result_html, theme)
    for summary in page.locator("details.nba-round > summary").all():
        summary.click()
    checks = {
        # element: minimum WCAG contrast (4.5 body text, 3 for secondary notes)
        "details.nba-round > summary": 4.5,
        ".nba-answer p": 4.5,
        ".nba-body pre": 4.5,
        "table.nba-table td": 4.5,
        ".nba-call-head": 4.5,
        ".nba-error": 4.5,
        ".nba-footer": 3.0,
        ".nba-note": 3.0,
    }
    low = {}
    for selector, minimum in checks.items():
        elements = page.locator(selector)
        assert elements.count() > 0, selector
        ratio = min(contrast(elements.nth(i)) for i in range(elements.count()))
        if ratio < minimum:
            low[selector] = round(ratio, 2)
    page.screenshot(path=str(artifacts / f"panels-{theme}.png"), full_page=True)
    assert low == {}, f"too little contrast in {theme}: {low}"
