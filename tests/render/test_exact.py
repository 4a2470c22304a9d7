"""Whole-output comparisons: the complete HTML, Markdown and plain text of fixed runs.

Fragment checks (``"ok" in html``) pass while a panel loses its arguments or a
footer its stop reason; these compare everything, as rich compares rendered
strings. The expected strings are written out here, by hand, from what a user
should see; only the stylesheet is taken from the package (it has its own tests).
"""

from __future__ import annotations

import io
from contextlib import redirect_stdout

from nbagent import RunResult, ToolCall, ToolResult, ToolRound, Usage
from nbagent.events import (
    RoundFinished,
    RunFinished,
    RunStarted,
    Status,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from nbagent.live import TerminalPrinter
from nbagent.render import (
    CSS,
    Transcript,
    render_result_html,
    render_result_markdown,
    render_result_text,
    result_mime_bundle,
)

WEATHER = ToolCall("c1", "get_weather", {"city": "Oslo", "days": 2})
WEATHER_DONE = ToolResult(
    "c1", "get_weather", True, '{"temp": 21}', duration_s=0.25, value={"temp": 21}
)
DELETE = ToolCall("c2", "delete", {"path": "/tmp/<x>"})
DELETE_DENIED = ToolResult(
    "c2",
    "delete",
    False,
    "Error: The user denied this call",
    "The user denied this call",
    approval="denied by user",
)
ROUND = ToolRound(
    "Checking *first*.", [WEATHER, DELETE], [WEATHER_DONE, DELETE_DENIED], duration_s=1.5
)
ANSWER = "It is **21 °C** in <Oslo>."
RESULT = RunResult(ANSWER, [ROUND], "max_rounds", Usage(1200, 34), "scripted:test", "c_1", 2.4)

STYLE = f"<style>{CSS}</style>"
FOOTER = "scripted:test · 1 round · 1,234 tokens (1,200 in, 34 out) · 2.4 s"


def test_result_html_whole() -> None:
    expected = (
        f'{STYLE}<div class="nbagent-out">'
        '<details class="nba-round nba-failed">'
        '<summary>Round 1 · get_weather, delete · <span class="nba-err">1 error</span>'
        " · 1.5 s</summary>"
        '<div class="nba-body">'
        '<div class="nba-pre-text"><p>Checking <em>first</em>.</p>\n</div>'
        '<div class="nba-call">'
        '<div class="nba-call-head">get_weather <span class="nba-ok">ok</span>'
        ' <span class="nba-note">250 ms</span></div>'
        '<div class="nba-note">arguments</div>'
        "<pre>{\n  &quot;city&quot;: &quot;Oslo&quot;,\n  &quot;days&quot;: 2\n}</pre>"
        '<div class="nba-note">result</div>'
        "<pre>{\n  &quot;temp&quot;: 21\n}</pre>"
        "</div>"
        '<div class="nba-call">'
        '<div class="nba-call-head">delete <span class="nba-err">error</span>'
        ' <span class="nba-note">0 ms</span>'
        ' <span class="nba-approval nba-err">denied by user</span></div>'
        '<div class="nba-note">arguments</div>'
        "<pre>{\n  &quot;path&quot;: &quot;/tmp/&lt;x&gt;&quot;\n}</pre>"
        '<div class="nba-note">result</div>'
        '<div class="nba-error"><strong>Error:</strong> The user denied this call</div>'
        "</div>"
        "</div></details>"
        '<div class="nba-answer"><p>It is <strong>21 °C</strong> in &lt;Oslo&gt;.</p>\n</div>'
        f'<div class="nba-footer">{FOOTER} · <span class="nba-stopped">stopped:</span>'
        " max rounds</div>"
        "</div>"
    )
    assert render_result_html(RESULT) == expected


def test_result_markdown_whole() -> None:
    expected = "\n".join(
        [
            "**Round 1 · get_weather, delete · 1 error · 1.5 s**",
            "",
            "Checking *first*.",
            "",
            "- **get_weather** → ok",
            "",
            "```json",
            '{\n  "city": "Oslo",\n  "days": 2\n}',
            "```",
            "```",
            '{"temp": 21}',
            "```",
            "",
            "- **delete** → error (denied by user)",
            "",
            "```json",
            '{\n  "path": "/tmp/<x>"\n}',
            "```",
            "```",
            "The user denied this call",
            "```",
            "",
            "It is **21 °C** in &lt;Oslo&gt;.",
            "",
            f"*{FOOTER} · stopped: max rounds*",
        ]
    )
    assert render_result_markdown(RESULT) == expected


def test_result_text_whole() -> None:
    expected = "\n".join(
        [
            "▸ Round 1 · get_weather, delete · 1 error · 1.5 s",
            '    get_weather(city="Oslo", days=2) -> ok',
            '    delete(path="/tmp/<x>") -> error [denied by user]',
            "",
            "It is **21 °C** in <Oslo>.",
            "",
            f"— {FOOTER} · stopped: max rounds",
        ]
    )
    assert render_result_text(RESULT) == expected


def test_unparsed_arguments_show_as_the_model_sent_them() -> None:
    broken = ToolCall("c9", "lookup", {}, raw_arguments='{"city": "Oslo"')
    rnd = ToolRound(None, [broken], [ToolResult("c9", "lookup", False, "bad", "Invalid JSON")])
    result = RunResult("Sorry.", [rnd], "complete", Usage(1, 1), "m", "c", 0.5)
    text = render_result_text(result)
    assert '    lookup({"city": "Oslo") -> error' in text.splitlines()
    assert "<pre>{&quot;city&quot;: &quot;Oslo&quot;</pre>" in render_result_html(result)


EVENTS = [
    RunStarted("weather?", "scripted:test", "c_1"),
    Status("Analyzing request…"),
    TextDelta("Checking ", 0),
    TextDelta("*first*.", 0),
    Status("Using Get Weather, Delete…"),
    ToolCallStarted(WEATHER, 0),
    ToolCallStarted(DELETE, 0),
    ToolCallFinished(WEATHER_DONE, 0),
]
REST = [
    ToolCallFinished(DELETE_DENIED, 0),
    RoundFinished(ROUND, 0),
    Status("Formulating response…"),
    TextDelta("It is **21 °C** in <Oslo>.", 1),
    RunFinished(RESULT),
]


def test_live_transcript_mid_round_whole() -> None:
    t = Transcript().feed_all(EVENTS)
    expected_html = (
        f'{STYLE}<div class="nbagent-out">'
        '<div class="nba-status">Using Get Weather, Delete…</div>'
        '<details class="nba-round" open>'
        "<summary>Round 1 · get_weather, delete · running</summary>"
        '<div class="nba-body">'
        '<div class="nba-pre-text"><p>Checking <em>first</em>.</p>\n</div>'
        '<div class="nba-call">'
        '<div class="nba-call-head">get_weather <span class="nba-ok">ok</span>'
        ' <span class="nba-note">250 ms</span></div>'
        '<div class="nba-note">arguments</div>'
        "<pre>{\n  &quot;city&quot;: &quot;Oslo&quot;,\n  &quot;days&quot;: 2\n}</pre>"
        '<div class="nba-note">result</div>'
        "<pre>{\n  &quot;temp&quot;: 21\n}</pre>"
        "</div>"
        '<div class="nba-call">'
        '<div class="nba-call-head">delete <span class="nba-note">running…</span></div>'
        '<div class="nba-note">arguments</div>'
        "<pre>{\n  &quot;path&quot;: &quot;/tmp/&lt;x&gt;&quot;\n}</pre>"
        "</div>"
        "</div></details>"
        "</div>"
    )
    assert t.html() == expected_html
    assert t.plain() == "\n".join(
        [
            "Using Get Weather, Delete…",
            "▸ Round 1 · get_weather, delete · running",
            '    get_weather(city="Oslo", days=2) -> ok',
            '    delete(path="/tmp/<x>") -> running',
        ]
    )
    t.feed_all(REST)
    assert t.bundle() == result_mime_bundle(RESULT)  # the final view is the static one


def test_terminal_progress_whole() -> None:
    """Terminal IPython's output for the run above: appended, never re-printed."""
    printer = TerminalPrinter()
    transcript = Transcript()
    out = io.StringIO()
    with redirect_stdout(out):
        printer.start(transcript)
        for event in [*EVENTS, *REST]:
            if transcript.feed(event):
                printer.update(transcript)
        printer.finish(transcript, error=None)
    assert out.getvalue() == (
        "· Analyzing request…\n"
        "Checking *first*.\n"
        "· Using Get Weather, Delete…\n"
        "▸ Round 1 · get_weather, delete · 1 error · 1.5 s\n"
        "· Formulating response…\n"
        "It is **21 °C** in <Oslo>.\n"
        f"\n— {FOOTER} · stopped: max rounds\n"
    )
