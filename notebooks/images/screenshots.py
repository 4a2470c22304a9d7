"""Re-take the README's chat screenshots, in JupyterLab Light and Dark.

Run from the repository root::

    python notebooks/images/screenshots.py

It starts a JupyterLab and headless Chromium the way the browser tests do (their
helpers in ``tests/browser``), with a private HOME and NBAGENT_HOME in a temporary
directory, opens a notebook whose ``ChatWidget`` talks to a scripted model, plays a
short session about a ``sales`` DataFrame and saves three states of the chat, each in
both themes, next to this file:

- ``chat-answer-{theme}.png``: a question mentioning ``@sales``, the tool card with
  its DataFrame, and an answer with a pandas code block (Copy, Insert as cell);
- ``chat-branches-{theme}.png``: an edited message with its "‹ 2/2 ›" arrows, the
  model box, the limits and the conversation's totals;
- ``chat-approval-{theme}.png``: a ``run_python`` call waiting for approval, its code
  highlighted, and a figure attached by name in the box.

The scripted model is named ``gpt-4o-mini`` and priced at that model's list price
(genai-prices), so the cards show what such a session would cost. This is not a test.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
IMAGES = Path(__file__).resolve().parent
WIDTH = 900  # the chat area's width in the images, in CSS pixels (device scale 1)

SETUP = r'''
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from nbagent import Agent, ChatWidget, tool
from nbagent.providers.base import Capabilities
from nbagent.testing import ScriptedModel, call, reply

months = ["2026-01", "2026-02", "2026-03", "2026-04", "2026-05", "2026-06"]
regions = ["North", "South", "East", "West"]
sales = pd.DataFrame(
    [
        {"month": m, "region": r, "units": 40 + 7 * i + 11 * j + (i * j) % 5,
         "revenue": round((40 + 7 * i + 11 * j + (i * j) % 5) * (18.5 + 1.5 * j), 2)}
        for i, m in enumerate(months)
        for j, r in enumerate(regions)
    ]
)

# Last quarter's trend, drawn earlier in the notebook: attached from the chat by name.
fig_trend, ax = plt.subplots(figsize=(5, 3), dpi=80)
sales.groupby("month")["revenue"].sum().plot(ax=ax, marker="o", title="Total revenue")
plt.close(fig_trend)

@tool
def summarize_sales(by: str = "region") -> pd.DataFrame:
    """Total units and revenue in the `sales` table, grouped by one of its columns."""
    table = sales.groupby(by)[["units", "revenue"]].sum()
    return table.sort_values("revenue", ascending=False).reset_index()

PLOT = """monthly = sales.pivot_table(
    index="month", columns="region", values="revenue", aggfunc="sum"
)
ax = monthly.plot(marker="o", figsize=(7, 3.5), title="Monthly revenue by region")
ax.set_ylabel("revenue ($)")"""

def analyst(request):
    question = request.prompt.lower()
    if "plot" in question:
        return reply("I'll draw it in the kernel.", calls=[call("run_python", code=PLOT)])
    if "which month" in question:  # not "month" alone: the @sales field has that column
        by_month = sales[sales.region == "West"] if "west" in question else sales
        best = by_month.groupby("month")["revenue"].sum()
        where = "for the West" if "west" in question else "overall"
        return reply(
            f"The best month {where} was **{best.idxmax()}** with "
            f"${best.max():,.0f} in revenue, {best.max() / best.mean() - 1:.0%} above "
            "the six-month average."
        )
    if not request.tool_results:
        totals = call("summarize_sales", by="region")
        return reply("Let me total the table by region.", calls=[totals])
    table = request.tool_results[-1].value
    top, second = table.iloc[0], table.iloc[1]
    return reply(
        f"**{top.region}** brought in the most: ${top.revenue:,.0f} from "
        f"{top.units:,} units, ahead of {second.region} (${second.revenue:,.0f}).\n\n"
        "To rank the regions yourself:\n\n"
        "```python\n"
        'totals = sales.groupby("region")["revenue"].sum()\n'
        "totals.sort_values(ascending=False)\n"
        "```"
    )

model = ScriptedModel(
    analyst, model="gpt-4o-mini", chunk_size=12, delay=0.01,
    capabilities=Capabilities(pricing_id="openai", context_window=128_000),
)
agent = Agent(model, tools=[summarize_sales], kernel=True, store=Path("history.db"))
chat = ChatWidget(agent, height="640px")
chat
'''


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from playwright.sync_api import sync_playwright

    from tests.browser.chat_page import Chat, write_notebook
    from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, running_jupyterlab

    with tempfile.TemporaryDirectory(prefix="nbagent-screenshots-") as temp:
        base = Path(temp)
        (base / "home").mkdir()
        private = {"HOME": str(base / "home"), "NBAGENT_HOME": str(base / "home" / ".nbagent")}
        (base / "lab").mkdir()
        with running_jupyterlab(base / "lab", private) as lab, sync_playwright() as playwright:
            write_notebook(lab.root, "sales.ipynb", SETUP)
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            # The chat's width follows the notebook's: this viewport gives about WIDTH px.
            context = browser.new_context(viewport={"width": WIDTH + 180, "height": 1600})
            page = context.new_page()
            page.set_default_timeout(60_000)
            page.on("dialog", lambda dialog: dialog.accept())
            try:
                play(page, lab.notebook_url("sales.ipynb"), Chat)
            except Exception:
                failure = Path(tempfile.gettempdir()) / "nbagent-screenshots-failure.png"
                page.screenshot(path=str(failure))
                print(f"failed: the page as it was is in {failure}", file=sys.stderr)
                raise
            finally:
                context.close()
                browser.close()


def play(page: Any, url: str, chat_of: Any) -> None:
    """Play the session in the notebook at ``url`` and save the screenshots."""
    from tests.browser.chat_page import open_lab

    open_lab(page, url)
    hide_side_panels(page)
    page.locator(".lm-MenuBar-itemLabel").get_by_text("Run", exact=True).click()
    page.locator(".lm-Menu-itemLabel").get_by_text("Run All Cells", exact=True).click()
    chat = chat_of(page)
    chat.textarea.wait_for(timeout=120_000)
    page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-InputArea").evaluate(
        "(el) => { el.style.display = 'none'; }"
    )  # only the chat: the notebook's setup code is not the subject

    # 1. A question, a tool card with its DataFrame, an answer with code.
    send(chat, "Which region brought in the most revenue in the sales table?")
    chat.turns.nth(0).locator("button.nbagent-code-insert").wait_for()
    chat.wait_status("Ready")
    open_cards(chat.turns.nth(0))
    scroll_transcript(chat, to="top")
    both_themes(page, chat, "chat-answer")

    # 2. A follow-up, edited: the "‹ 2/2 ›" arrows, model box, limits and totals.
    send(chat, "Which month was best?")
    chat.turns.nth(1).locator(".nba-answer", has_text="best month").wait_for()
    chat.wait_status("Ready")
    chat.root.locator(".nbagent-turn-view").nth(1).locator("button.nbagent-turn-edit").click()
    chat.textarea.fill("Which month was best for the West?")
    chat.textarea.press("Enter")
    chat.root.locator(".nbagent-branch-label", has_text="2/2").wait_for()
    chat.wait_status("Ready")
    scroll_transcript(chat, to="bottom")
    both_themes(page, chat, "chat-branches")

    # 3. A question mentioning @sales: run_python waiting for approval; a figure
    # attached by name in the box.
    send(chat, "From @sales, plot the monthly revenue of each region")
    chat.root.locator(".nbagent-chat-approval").wait_for()
    # The approval row shows the code whole; the waiting round's panel points to it.
    chat.turns.nth(2).locator("details.nba-round[open] > summary").click()
    chat.suggest("Does it match @fig_t", "@fig_trend")
    chat.textarea.press("Tab")
    chat.root.locator(".nbagent-chat-attachment", has_text="fig_trend").wait_for()
    chat.textarea.press_sequentially("this earlier chart?")
    scroll_transcript(chat, to="bottom")
    both_themes(page, chat, "chat-approval")


def send(chat: Any, text: str) -> None:
    chat.textarea.click()
    chat.textarea.fill(text)
    chat.textarea.press("Enter")


def open_cards(turn: Any) -> None:
    """Open the turn's collapsed rounds, so the DataFrame result shows."""
    for summary in turn.locator("details.nba-round:not([open]) > summary").all():
        summary.click()


def scroll_transcript(chat: Any, *, to: str) -> None:
    # A column-reverse scroller: 0 is its bottom, minus its height its top.
    chat.root.locator(".nbagent-chat-scroller").evaluate(
        "(el, to) => { el.scrollTop = to === 'top' ? -el.scrollHeight : 0; }", to
    )


def hide_side_panels(page: Any) -> None:
    """Close the file browser (so the notebook, and the chat, take the page's width)."""
    page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").click()
    page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").wait_for(state="detached")


def both_themes(page: Any, chat: Any, name: str) -> None:
    """Save ``{name}-light.png`` and ``{name}-dark.png``; the page ends in the light theme."""
    for theme, light in (("JupyterLab Light", "true"), ("JupyterLab Dark", "false")):
        set_theme(page, theme, light)
        path = IMAGES / f"{name}-{'light' if light == 'true' else 'dark'}.png"
        chat.root.screenshot(path=str(path), animations="disabled", caret="hide")
        shrink(path)
        size = path.stat().st_size / 1024
        note = chip_contrast(chat)
        print(f"{path.relative_to(ROOT)}: {size:.0f} KB{note}")
    set_theme(page, "JupyterLab Light", "true")


def shrink(path: Path) -> None:
    """Re-save the PNG with a 256-colour palette: a UI screenshot looks the same at 40%."""
    from PIL import Image

    with Image.open(path) as image:
        palette = image.convert("RGB").quantize(
            colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE
        )
    palette.save(path, optimize=True)


def chip_contrast(chat: Any) -> str:
    """The WCAG contrast of the first @mention chip's text, when one is shown."""
    from tests.browser.conftest import _CONTRAST_JS

    chips = chat.root.locator(".nbagent-chip")
    if not chips.count():
        return ""
    return f", @mention chip contrast {chips.first.evaluate(_CONTRAST_JS):.1f}:1"


def set_theme(page: Any, theme: str, light: str) -> None:
    if page.evaluate("document.body.dataset.jpThemeLight") == light:
        return
    page.locator(".lm-MenuBar-itemLabel").get_by_text("Settings", exact=True).click()
    page.locator(".lm-Menu-itemLabel").get_by_text("Theme", exact=True).click()
    page.locator(".lm-Menu-itemLabel").get_by_text(theme, exact=True).click()
    page.wait_for_function(f"document.body.dataset.jpThemeLight === '{light}'")
    page.wait_for_timeout(800)  # the theme's stylesheet applied


if __name__ == "__main__":
    main()
