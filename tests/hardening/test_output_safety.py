"""No output of nbagent fetches what a model chose or lets text drive the viewer.

Issue 10, item 6: model Markdown images were live ``<img>`` (a tracking pixel
fetched when the output is viewed), bidi overrides survived in HTML, Markdown
and text, and ANSI escapes reached the terminal through ``UsageError`` messages.
The browser half (no request reaches a tracking server) is
``tests/browser/test_remote_content.py``.
"""

from __future__ import annotations

import base64
import zlib
from typing import Any

import pytest

from nbagent.render import (
    render_markdown,
    render_result_html,
    render_result_markdown,
    render_result_text,
    render_value_html,
)
from nbagent.testing import call, reply
from nbagent.tools import tool
from tests.support.agents import scripted_agent
from tests.support.html import HtmlFacts, assert_inert

BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
ANSI = "\x1b[31m\x1b]0;title\x07\x9b2J\x08\r"
CONTROLS = {c for c in ANSI if ord(c) < 32 or 0x7F <= ord(c) <= 0x9F}
TRACKER = "http://127.0.0.1:9/pixel.png?leak=secret"

REMOTE_IMAGES = [
    f"![pixel]({TRACKER})",
    "![pixel](https://tracker.example/p.png)",
    "![pixel](//tracker.example/p.png)",
    '![pixel](<http://tracker.example/p b.png> "title")',
    "![pixel][ref]\n\n[ref]: http://tracker.example/r.png",
    "![pixel](/files/local.png)",
    "[![pixel](http://tracker.example/in-a-link.png)](http://example.com)",
]


def png_bytes() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    header = (1).to_bytes(4, "big") * 2 + bytes([8, 0, 0, 0, 0])
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\x00"))
        + chunk(b"IEND", b"")
    )


class Picture:
    """A value with a PNG repr, as a plotting library's figure has."""

    def _repr_png_(self) -> bytes:
        return png_bytes()


@pytest.mark.parametrize("markdown", REMOTE_IMAGES)
def test_a_remote_markdown_image_becomes_a_link_never_an_img(markdown):
    html = render_markdown(markdown)
    facts = assert_inert(html)
    assert facts.find("img") == [], html
    assert any("pixel" in (a.get("title") or "") or a.get("href") for a in facts.find("a")), html


def test_model_images_in_a_run_are_links_and_the_tools_own_image_stays_inline():
    @tool(register=False)
    def plot() -> Picture:
        """Draws a picture."""
        return Picture()

    answer = "\n\n".join(REMOTE_IMAGES) + "\n\n![inline](data:image/png;base64,AAAA)"
    agent = scripted_agent([reply(calls=[call("plot")]), answer], tools=[plot], store=None)
    result = agent.run_sync("draw")
    html = render_result_html(result)
    images = HtmlFacts(html).find("img")
    assert len(images) == 1 and (images[0]["src"] or "").startswith("data:image/png;base64,")
    assert base64.b64decode((images[0]["src"] or "").split(",", 1)[1]) == png_bytes()
    for twin in (render_result_markdown(result), agent.conversation.to_markdown()):
        assert "![" not in twin, twin
        rendered = render_markdown(twin)
        assert HtmlFacts(rendered).find("img") == [], rendered


def hostile_run() -> Any:
    @tool(register=False)
    def lookup(query: str) -> str:
        """Looks something up."""
        return f"result {BIDI} {ANSI} for {query}"

    answer = f"The answer is {BIDI}evil{ANSI} (txt.exe\u202egpj.)"
    agent = scripted_agent(
        [reply(f"thinking {BIDI}{ANSI}", [call("lookup", query=f"q{BIDI}{ANSI}")]), answer],
        tools=[lookup],
        store=None,
    )
    return agent, agent.run_sync(f"ask {BIDI}")


def test_bidi_and_control_characters_are_neutralised_in_every_rendering():
    agent, result = hostile_run()
    outputs = {
        "html": render_result_html(result),
        "markdown": render_result_markdown(result),
        "text": render_result_text(result),
        "export": agent.conversation.to_markdown(),
        "markdown->html": render_markdown(result.output),
        "value": render_value_html(f"v{BIDI}{ANSI}"),
        "value json": render_value_html({"k": f"v{BIDI}{ANSI}"}),
    }
    for where, text in outputs.items():
        bad = sorted({hex(ord(c)) for c in text if c in BIDI or c in CONTROLS})
        assert not bad, f"{where} keeps {bad}"
        assert "\ufffd" in text, where  # neutralised visibly, not silently dropped


def test_usage_errors_never_carry_escapes_to_the_terminal(shell):
    from IPython.core.error import UsageError

    with pytest.raises(UsageError) as caught:
        shell.run_cell_magic("agent", "--\x1b[31mevil\u202e", "hi")
    assert "\x1b" not in str(caught.value) and "\u202e" not in str(caught.value)
    with pytest.raises(UsageError) as caught:
        shell.run_line_magic("agent", "resume \x1b]0;owned\x07\u202e")
    assert "\x1b" not in str(caught.value) and "\u202e" not in str(caught.value)


@pytest.fixture
def shell() -> Any:
    from IPython.core.interactiveshell import InteractiveShell

    InteractiveShell.clear_instance()
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "nbagent")
    yield sh
    InteractiveShell.clear_instance()


def test_a_provider_error_message_never_carries_escapes_to_the_terminal():
    from nbagent.errors import ProviderError
    from tests.support.agents import http_agent
    from tests.support.servers import Reply, WireServer

    server = WireServer()
    try:
        hostile = f"quota exceeded {ANSI} {BIDI} see \x1b]8;;http://evil/\x07link\x1b]8;;\x07"
        server.add(Reply(429, {"error": {"message": hostile, "type": "rate\x1b[2J"}}))
        agent = http_agent("openai:gpt-test", server, max_retries=0, store=None)
        with pytest.raises(ProviderError) as caught:
            agent.run_sync("hi")
    finally:
        server.close()
    text = str(caught.value)
    assert "quota exceeded" in text
    bad = sorted({hex(ord(c)) for c in text if c in BIDI or c in CONTROLS or c == "\x1b"})
    assert not bad, text
