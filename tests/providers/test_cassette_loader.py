"""The one cassette loader: every recorded file loads, bodies come out decoded."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.support.cassettes import DATA, load_bodies, load_cassette

ALL_FILES = sorted(
    p.relative_to(DATA).as_posix() for p in DATA.rglob("*") if p.is_file() and p.name != "README.md"
)


def test_all_32_recordings_are_present() -> None:
    assert len(ALL_FILES) == 32


@pytest.mark.parametrize("name", ALL_FILES)
def test_every_recording_loads_with_decoded_bodies(name: str) -> None:
    cassette = load_cassette(DATA / name)
    assert cassette.interactions
    for interaction in cassette.interactions:
        body = interaction.response.body
        assert body[:2] != b"\x1f\x8b"  # gzip was undone
        assert "content-encoding" not in interaction.response.headers
        text = body.decode("utf-8")  # every body is text once decoded
        assert text.strip()
        if interaction.request is not None and interaction.request.body:
            interaction.request.json()  # requests are JSON
    expected = {
        ".har": "har",
        ".httprr": "httprr",
        ".sse": "raw",
        ".json": "raw",
    }.get(Path(name).suffix)
    if expected:
        assert cassette.format == expected


def test_gzip_binary_bodies_are_sse_text() -> None:
    cassette = load_cassette(DATA / "llm-anthropic/anthropic/test_tools.yaml")
    assert cassette.format == "vcr"
    first = cassette.responses[0]
    assert first.is_stream
    assert first.text.startswith("event: message_start")


def test_pydantic_ai_parsed_bodies_become_json() -> None:
    cassette = load_cassette(DATA / "pydantic-ai/anthropic/test_multiple_parallel_tool_calls.yaml")
    assert cassette.format == "vcr-pydantic-ai"
    assert cassette.requests[0].json()["model"]
    assert cassette.responses[0].json()["type"] == "message"


def test_go_vcr_keeps_crlf_event_separators() -> None:
    cassette = load_cassette(DATA / "fantasy/gemini/gemini-2.5-flash/multi_tool_streaming.yaml")
    assert cassette.format == "go-vcr"
    assert b"\r\n\r\n" in cassette.responses[0].body
    assert cassette.requests[0].path.endswith("?alt=sse")


def test_prism_series_and_ndjson_detection() -> None:
    names = ["stream-with-tools-1.sse", "stream-with-tools-2.sse", "stream-with-tools-3.sse"]
    cassette = load_bodies([DATA / "prism/ollama" / n for n in names])
    assert len(cassette.interactions) == 3
    assert all(i.request is None for i in cassette.interactions)
    assert [r.is_stream for r in cassette.responses] == [True, True, True]


def test_httprr_chunked_and_gzip(tmp_path: Path) -> None:
    """A streamed httprr response keeps HTTP/1.1 chunk framing; the loader removes it."""
    lines = [json.dumps({"message": {"content": c}, "done": c == "!"}) + "\n" for c in "hi!"]
    payload = "".join(lines).encode()
    chunked = (
        b"".join(b"%x\r\n%s\r\n" % (len(x.encode()), x.encode()) for x in lines) + b"0\r\n\r\n"
    )
    request = (
        b"POST http://localhost:11434/api/chat HTTP/1.1\r\nHost: localhost:11434\r\n"
        b"User-Agent: langchaingo-httprr\n"  # newer recordings end this line with a bare LF
        b"Content-Length: 2\r\n\r\n{}"
    )
    response = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n" + chunked
    )
    gz_body = gzip.compress(b'{"ok": true}')
    response2 = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
        b"Content-Length: %d\r\n\r\n" % len(gz_body)
    ) + gz_body
    trace = b"httprr trace v1\n"
    for req, resp in ((request, response), (request, response2)):
        trace += b"%d %d\n" % (len(req), len(resp)) + req + resp
    path = tmp_path / "x.httprr"
    path.write_bytes(trace)
    cassette = load_cassette(path)
    assert cassette.format == "httprr"
    assert [r.status for r in cassette.responses] == [200, 200]
    assert cassette.responses[0].body == payload
    assert cassette.responses[0].is_stream
    assert cassette.responses[1].json() == {"ok": True}
    assert cassette.requests[0].path == "/api/chat"
    assert cassette.requests[0].headers["user-agent"] == "langchaingo-httprr"
