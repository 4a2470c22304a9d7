"""Rendering: panels, values, Markdown, twins, the live Transcript and XSS payloads."""

from __future__ import annotations

import base64
import io
import re

import pandas as pd
import pytest

from nbagent import Agent, RunResult, Tool, ToolCall, ToolResult, ToolRound, Usage
from nbagent.events import (
    RoundFinished,
    RunFinished,
    Status,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from nbagent.render import (
    Transcript,
    render_markdown,
    render_result_html,
    render_result_markdown,
    render_result_text,
    render_round_html,
)
from nbagent.testing import ScriptedModel, call, reply
from tests.support.html import HtmlFacts, assert_inert

XSS = [
    "<script>alert('x')</script>",
    '<img src=x onerror="alert(1)">',
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](java\tscript:alert(1))",
    "[click](vbscript:msgbox(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![img](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
    "<javascript:alert(1)>",
    "[ref]\n\n[ref]: javascript:alert(1)",
    "<!-- hidden comment --> visible",
    "<a href='javascript:alert(1)'>x</a>",
    "<svg onload=alert(1)>",
    '"><script>alert(1)</script>',
    "x`<img src=x onerror=alert(1)>`",
    "```\n</pre><script>alert(1)</script>\n```",
]


def make_result(rounds: list[ToolRound], output: str, stop: str = "complete") -> RunResult:
    return RunResult(output, rounds, stop, Usage(120, 30), "scripted:test", "c_1", 1.5)


def test_round_panel_is_collapsed_details_with_summary() -> None:
    rnd = ToolRound(
        "Checking the weather first.",
        [ToolCall("c1", "get_weather", {"city": "Paris", "days": 2})],
        [ToolResult("c1", "get_weather", True, '{"t": 21}', duration_s=0.25, value={"temp": 21})],
        duration_s=0.4,
    )
    out = render_round_html(rnd, 0)
    facts = HtmlFacts(out)
    details = facts.find("details")
    assert len(details) == 1 and "open" not in details[0]
    summary = re.search(r"<summary>(.*?)</summary>", out, re.S)
    assert summary is not None
    assert HtmlFacts(summary.group(1)).text == "Round 1 · get_weather · ok · 400 ms"
    assert "<p>Checking the weather first.</p>" in out
    # arguments pretty-printed, value as JSON
    assert "<pre>{\n  &quot;city&quot;: &quot;Paris&quot;,\n  &quot;days&quot;: 2\n}</pre>" in out
    assert "<pre>{\n  &quot;temp&quot;: 21\n}</pre>" in out


def test_dataframe_result_shows_head_and_full_shape() -> None:
    frame = pd.DataFrame({"city": [f"c{i}" for i in range(50)], "temp": range(50)})
    rnd = ToolRound(
        None,
        [ToolCall("c1", "cities", {})],
        [ToolResult("c1", "cities", True, "csv...", value=frame)],
    )
    out = render_round_html(rnd, 2, max_rows=5)
    facts = HtmlFacts(out)
    assert "Round 3 · cities" in facts.text
    assert "DataFrame: 50 rows × 2 columns (first 5 shown)" in facts.text
    cells = [t for t in facts.tags if t[0] == "tr"]
    assert len(cells) == 1 + 5  # header + 5 rows
    assert "c4" in facts.text and "c5" not in facts.text.split("shown")[1]


def test_error_result_is_distinct_with_collapsible_traceback() -> None:
    rnd = ToolRound(
        None,
        [ToolCall("c1", "boom", {})],
        [
            ToolResult(
                "c1",
                "boom",
                False,
                "Error: ValueError: bad",
                "ValueError: bad",
                traceback="Traceback (most recent call last):\nValueError: bad\n",
            ),
        ],
    )
    out = render_round_html(rnd, 0)
    assert 'class="nba-round nba-failed"' in out
    assert '<span class="nba-err">1 error</span>' in out
    assert '<div class="nba-error"><strong>Error:</strong> ValueError: bad' in out
    assert "<details><summary>Traceback</summary><pre>Traceback (most recent call last):" in out


def test_approval_decision_is_shown() -> None:
    rnd = ToolRound(
        None,
        [ToolCall("c1", "delete", {"path": "x"})],
        [
            ToolResult(
                "c1",
                "delete",
                False,
                "Error: denied",
                "The user denied this call",
                approval="denied by policy NBAGENT_APPROVAL=deny",
            ),
        ],
    )
    out = render_round_html(rnd, 0)
    assert '<span class="nba-approval nba-err">denied by policy NBAGENT_APPROVAL=deny</span>' in out
    assert "[denied by policy NBAGENT_APPROVAL=deny]" in render_result_text(make_result([rnd], "x"))


def test_matplotlib_figure_and_pil_image_render_as_png() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    fig, ax = plt.subplots()
    ax.plot([1, 2, 3])
    img = Image.new("RGB", (4, 3), (255, 0, 0))
    rnd = ToolRound(
        None,
        [ToolCall("a", "plot", {}), ToolCall("b", "pic", {})],
        [
            ToolResult("a", "plot", True, "Figure", value=fig),
            ToolResult("b", "pic", True, "Image", value=img),
        ],
    )
    facts = assert_inert(render_round_html(rnd, 0))
    imgs = facts.find("img")
    assert len(imgs) == 2
    for attrs in imgs:
        src = attrs["src"] or ""
        png = base64.b64decode(src.split(",", 1)[1])
        assert png.startswith(b"\x89PNG\r\n\x1a\n")
    plt.close(fig)


def test_final_answer_markdown_and_footer() -> None:
    result = make_result(
        [], "# Title\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n**bold** [ok](https://x.org)"
    )
    out = render_result_html(result)
    assert "<h1>Title</h1>" in out and "<td>1</td>" in out and "<strong>bold</strong>" in out
    link = '<a href="https://x.org" target="_blank" rel="noopener noreferrer nofollow">ok</a>'
    assert link in out
    facts = HtmlFacts(out)
    assert "scripted:test · 0 rounds · 150 tokens (120 in, 30 out) · 1.5 s" in facts.text
    assert "stopped" not in facts.text
    stopped = render_result_html(make_result([], "partial", "cancelled"))
    assert "stopped: cancelled" in HtmlFacts(stopped).text


def test_result_repr_is_short_and_ipython_shows_the_plain_twin() -> None:
    from IPython.lib.pretty import pretty

    frame = pd.DataFrame({"x": range(1000)})
    rnd = ToolRound(
        None,
        [ToolCall("c1", "table", {"n": 1000})],
        [ToolResult("c1", "table", True, "1000 rows", value=frame)],
        duration_s=0.2,
    )
    result = make_result([rnd], "word " * 200)
    assert repr(result) == (
        f"RunResult(output={('word ' * 16)[:79] + '…'!r}, stop_reason='complete', rounds=1, "
        "calls=1, usage=Usage(input_tokens=120, output_tokens=30), model='scripted:test')"
    )
    # What a notebook's text/plain (and `nbagent demo`) shows: the same twin as %%agent.
    assert pretty(result) == render_result_text(result)


def test_styles_are_scoped_and_use_jupyter_variables() -> None:
    out = render_result_html(make_result([], "hi"))
    style = re.search(r"<style>(.*?)</style>", out, re.S)
    assert style is not None
    rules = [r.strip() for r in style.group(1).split("}") if r.strip()]
    for rule in rules:
        selectors = rule.split("{")[0]
        assert all(s.strip().startswith(".nbagent-out") for s in selectors.split(",")), selectors
    assert "var(--jp-error-color1,#d32f2f)" in style.group(1)
    assert out.count('<div class="nbagent-out">') == 1


@pytest.mark.parametrize("payload", XSS)
def test_payload_inert_everywhere(payload: str) -> None:
    rnd = ToolRound(
        payload,
        [ToolCall("c1", "t", {"q": payload}, raw_arguments=None)],
        [
            ToolResult("c1", "t", True, payload, value=payload),
        ],
    )
    bad = ToolRound(
        None,
        [ToolCall("c2", "t2", {})],
        [
            ToolResult("c2", "t2", False, payload, payload, traceback=payload, approval=payload),
        ],
    )
    frame = pd.DataFrame({payload: [payload]}, index=[payload])
    df_round = ToolRound(
        None,
        [ToolCall("c3", "t3", {})],
        [
            ToolResult("c3", "t3", True, payload, value=frame),
        ],
    )
    # a model can invent tool names and argument keys, too
    invented = ToolRound(
        payload,
        [ToolCall("c4", payload, {payload: payload})],
        [
            ToolResult("c4", payload, False, payload, f"Unknown tool {payload!r}"),
        ],
    )
    result = make_result([rnd, bad, df_round, invented], payload)
    result.model = payload
    facts = assert_inert(render_result_html(result))
    transcript = Transcript()
    transcript.feed(Status(payload))
    transcript.feed(TextDelta(payload, 0))
    assert_inert(transcript.html())
    transcript.feed(ToolCallStarted(invented.calls[0], 0))
    assert_inert(transcript.html())
    # the payload is still visible to the human, as text
    visible = payload.replace("<!-- hidden comment --> ", "<!-- hidden comment --> ")
    assert visible.split("\n")[0][:12] in facts.text
    assert_inert(render_markdown(payload))
    # the Markdown twin, rendered by a Markdown renderer that allows HTML, stays inert too
    from markdown_it import MarkdownIt

    permissive = MarkdownIt("commonmark", {"html": True})
    permissive.validateLink = lambda url: True  # type: ignore[method-assign]
    assert_inert(permissive.render(render_result_markdown(result)))


def test_transcript_follows_events_and_caches_rounds() -> None:
    t = Transcript()
    assert t.feed(Status("Analyzing request…"))
    assert not t.feed(Status("Analyzing request…"))
    t.feed(TextDelta("Let me <check>", 0))
    assert '<div class="nba-stream">Let me &lt;check&gt;</div>' in t.html()
    c = ToolCall("c1", "get_weather", {"city": "Oslo"})
    t.feed(Status("Using Get Weather…"))
    t.feed(ToolCallStarted(c, 0))
    live = t.html()
    assert HtmlFacts(live).find("details") == [{"class": "nba-round", "open": None}]
    assert "running…" in live and "Using Get Weather…" in live
    assert "Round 1 · get_weather · running" in HtmlFacts(live).text
    res = ToolResult("c1", "get_weather", True, "sunny", duration_s=0.1)
    t.feed(ToolCallFinished(res, 0))
    t.feed(RoundFinished(ToolRound("Let me <check>", [c], [res]), 0))
    t.feed(TextDelta("It is sunny.", 1))
    live = t.html()
    assert HtmlFacts(live).find("details") == [{"class": "nba-round"}]
    assert "Round 1 · get_weather · ok" in live
    assert "It is sunny." in live and "Let me &lt;check&gt;" in live
    assert "It is sunny." in t.plain() and "It is sunny." in t.markdown()
    t.mark_interrupted()
    assert "Cancelled" in t.html()


def test_transcript_final_view_equals_result_rendering() -> None:
    @Tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    def script(request):  # type: ignore[no-untyped-def]
        if request.round_index == 0:
            return reply("Adding.", [call("add", a=2, b=3)])
        return reply("The sum is **5**.")

    agent = Agent(ScriptedModel(script), tools=[add])
    t = Transcript()
    for event in agent.stream_sync("2+3?"):
        t.feed(event)
    assert t.result is not None and t.done
    assert t.html() == render_result_html(t.result)
    assert t.bundle()["text/markdown"] == render_result_markdown(t.result)
    assert t.result._repr_html_() == t.html()
    facts = assert_inert(t.html())
    assert "The sum is 5." in facts.text
    assert "Round 1 · add · ok" in facts.text


class CountingImage:
    """A tool value that draws itself as PNG and counts how often it was asked to."""

    def __init__(self) -> None:
        self.draws = 0

    def _repr_png_(self) -> bytes:
        from PIL import Image

        self.draws += 1
        buffer = io.BytesIO()
        Image.new("RGB", (2, 2)).save(buffer, format="PNG")
        return buffer.getvalue()


def test_transcript_renders_each_finished_call_once() -> None:
    image = CountingImage()
    a = ToolCall("same-id", "draw", {})
    b = ToolCall("other", "wait", {})
    t = Transcript()
    t.feed(ToolCallStarted(a, 0))
    t.feed(ToolCallStarted(b, 0))
    done = ToolResult("same-id", "draw", True, "image", value=image)
    t.feed(ToolCallFinished(done, 0))
    for _ in range(5):  # redraws while the other call still runs
        assert len(HtmlFacts(t.html()).find("img")) == 1
    rest = ToolResult("other", "wait", True, "ok")
    t.feed(ToolCallFinished(rest, 0))
    first = ToolRound(None, [a, b], [done, rest])
    t.feed(RoundFinished(first, 0))
    # a later round reusing the call id (some APIs do) is not confused with the first
    again = ToolResult("same-id", "draw", True, "plain text this time", value="plain text")
    second = ToolRound(None, [ToolCall("same-id", "draw", {})], [again])
    t.feed(RoundFinished(second, 1))
    t.feed(RunFinished(make_result([first, second], "done")))
    final = t.html()
    assert len(HtmlFacts(final).find("img")) == 1 and "plain text" in final
    assert image.draws == 1


def test_plain_text_twin_cannot_drive_the_terminal() -> None:
    hostile = "ok\x1b[2J\x1b]0;pwned\x07\rdone\x9b31m"
    rnd = ToolRound(
        None, [ToolCall("c1", "t\x1b[31m", {"a": hostile})], [ToolResult("c1", "t", True, hostile)]
    )
    text = render_result_text(make_result([rnd], hostile))
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text
    assert "\x9b" not in text
    assert "ok\ufffd[2J" in text
    t = Transcript()
    t.feed(TextDelta(hostile, 0))
    assert "\x1b" not in t.plain()
