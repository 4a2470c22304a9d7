"""The loader on recording-format variants absent from our own set.

Each file is written here, in the exact layout its recorder produces, around
small payloads made up for the test: Ruby VCR (``http_interactions``,
``base64_string``), VCR.py with a bare ``!!binary`` body, go-vcr without a
version and with ``status: 200 OK``, HAR with base64 content and as ``.json``,
deflate, a brotli body (a clear error), raw SSE starting with a comment, and
an SSE stream recorded gzip-compressed. One Ruby VCR cassette is replayed
end to end through the agent.
"""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from pathlib import Path

import pytest
import yaml

from tests.support.agents import http_agent
from tests.support.cassettes import load_cassette, replies_for
from tests.support.servers import WireServer

SSE = (
    'data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n'
    'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    "data: [DONE]\n\n"
)
CHAT = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}}]}


def _write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def test_ruby_vcr_with_base64_body(tmp_path: Path) -> None:
    gz = gzip.compress(SSE.encode())
    path = _write(
        tmp_path,
        "ruby.yml",
        f"""---
http_interactions:
- request:
    method: post
    uri: https://api.openai.com/v1/chat/completions
    body:
      encoding: UTF-8
      string: '{{"model":"gpt-4.1-nano","stream":true,"messages":[]}}'
    headers:
      Content-Type:
      - application/json
  response:
    status:
      code: 200
      message: OK
    headers:
      Content-Type:
      - text/event-stream; charset=utf-8
      Content-Encoding:
      - gzip
    body:
      encoding: ASCII-8BIT
      base64_string: |
        {base64.encodebytes(gz).decode().replace(chr(10), chr(10) + " " * 8).rstrip()}
  recorded_at: Mon, 01 Sep 2025 10:00:00 GMT
recorded_with: VCR 6.3.1
""",
    )
    cassette = load_cassette(path)
    assert cassette.format == "vcr"
    (request,) = cassette.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.json()["model"] == "gpt-4.1-nano"
    (response,) = cassette.responses
    assert response.body == SSE.encode()
    assert response.is_stream
    assert "content-encoding" not in response.headers


def test_vcrpy_bare_binary_body_and_identical_requests(tmp_path: Path) -> None:
    """``body: !!binary`` directly under response (no ``string:``), twice the same request."""
    encoded = base64.b64encode(json.dumps(CHAT).encode()).decode()
    interaction = f"""- request:
    body: '{{"model":"m"}}'
    method: POST
    uri: http://127.0.0.1:11434/v1/chat/completions
  response:
    body: !!binary |
      {encoded}
    headers:
      content-type:
      - application/json
    status:
      code: 200
      message: OK
"""
    path = _write(tmp_path, "twice.yaml", "interactions:\n" + interaction * 2 + "version: 1\n")
    cassette = load_cassette(path)
    assert [r.json() for r in cassette.responses] == [CHAT, CHAT]
    assert cassette.requests[0].body == cassette.requests[1].body


def test_go_vcr_without_version_and_status_text(tmp_path: Path) -> None:
    data = {
        "interactions": [
            {
                "request": {
                    "url": "http://localhost:8080/v1/chat/completions",
                    "method": "POST",
                    "body": '{"model":"m"}',
                    "content_length": 13,
                },
                "response": {
                    "body": SSE,
                    "headers": {"Content-Type": ["text/event-stream"]},
                    "status": "200 OK",
                    "content_length": -1,
                },
            }
        ]
    }
    cassette = load_cassette(_write(tmp_path, "v1.yaml", yaml.safe_dump(data)))
    assert cassette.format == "go-vcr"
    assert cassette.responses[0].status == 200
    assert cassette.responses[0].text == SSE
    assert cassette.responses[0].is_stream


def test_har_base64_gzip_content_and_har_as_json(tmp_path: Path) -> None:
    text = base64.b64encode(gzip.compress(SSE.encode())).decode()
    har = {
        "log": {
            "version": "1.2",
            "entries": [
                {
                    "request": {
                        "method": "POST",
                        "url": "https://api.anthropic.com/v1/messages",
                        "headers": [{"name": "Content-Type", "value": "application/json"}],
                        "postData": {"mimeType": "application/json", "text": '{"model":"c"}'},
                    },
                    "response": {
                        "status": 200,
                        "headers": [{"name": "Content-Encoding", "value": "gzip"}],
                        "content": {
                            "mimeType": "text/event-stream",
                            "encoding": "base64",
                            "text": text,
                        },
                    },
                }
            ],
        }
    }
    for name in ("x.har", "x.json"):
        cassette = load_cassette(_write(tmp_path, name, json.dumps(har)))
        assert cassette.format == "har"
        assert cassette.responses[0].body == SSE.encode()
        assert cassette.responses[0].is_stream


def _one_response_vcr(tmp_path: Path, body: bytes, encoding: str) -> Path:
    data = {
        "interactions": [
            {
                "request": {"method": "POST", "uri": "http://x/api/chat", "body": "{}"},
                "response": {
                    "status": {"code": 200},
                    "headers": {
                        "Content-Type": ["application/json"],
                        "Content-Encoding": [encoding],
                    },
                    "body": {"string": body},
                },
            }
        ]
    }
    return _write(tmp_path, f"{encoding}.yaml", yaml.dump(data))


def test_deflate_is_undone_and_brotli_is_a_clear_error(tmp_path: Path) -> None:
    raw = json.dumps(CHAT).encode()
    cassette = load_cassette(_one_response_vcr(tmp_path, zlib.compress(raw), "deflate"))
    assert cassette.responses[0].json() == CHAT
    # A header that says br over a body already decoded by the recorder is fine...
    cassette = load_cassette(_one_response_vcr(tmp_path, raw, "br"))
    assert cassette.responses[0].json() == CHAT
    # ...compressed bytes that cannot be decoded here are an error, not garbage.
    with pytest.raises(ValueError, match="'br'"):
        load_cassette(_one_response_vcr(tmp_path, b"\x8b\x05\x80\xff\xfe" * 10, "br"))


def test_raw_sse_body_starting_with_a_comment(tmp_path: Path) -> None:
    """OpenRouter sends ``: OPENROUTER PROCESSING`` keep-alives before the data."""
    cassette = load_cassette(_write(tmp_path, "stream-1.txt", ": OPENROUTER PROCESSING\n\n" + SSE))
    assert cassette.format == "raw"
    assert cassette.responses[0].is_stream


async def test_ruby_vcr_tool_exchange_replays(tmp_path: Path, wire_server: WireServer) -> None:
    """A Ruby VCR recording (capitalised headers, base64 gzip SSE) through the agent."""

    def weather(city: str) -> str:
        """Weather for a city."""
        return "12 C"

    first = (
        'data: {"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,'
        '"id":"call_r1","type":"function","function":{"name":"weather","arguments":""}}]}}]}\n\n'
        'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":'
        '{"arguments":"{\\"city\\":\\"Lima\\"}"}}]}}]}\n\n'
        'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'
        'data: {"choices":[],"usage":{"prompt_tokens":30,"completion_tokens":9}}\n\n'
        "data: [DONE]\n\n"
    )
    second = (
        'data: {"choices":[{"index":0,"delta":{"content":"Lima: 12 C."}}]}\n\n'
        'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        'data: {"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":5}}\n\n'
        "data: [DONE]\n\n"
    )
    interactions = [
        {
            "request": {
                "method": "post",
                "uri": "https://api.openai.com/v1/chat/completions",
                "body": {"encoding": "UTF-8", "string": '{"model":"gpt-4.1-nano"}'},
                "headers": {"Content-Type": ["application/json"]},
            },
            "response": {
                "status": {"code": 200, "message": "OK"},
                "headers": {
                    "Content-Type": ["text/event-stream; charset=utf-8"],
                    "Content-Encoding": ["gzip"],
                    "Transfer-Encoding": ["chunked"],
                },
                "body": {
                    "encoding": "ASCII-8BIT",
                    "base64_string": base64.encodebytes(gzip.compress(body.encode())).decode(),
                },
                "recorded_at": "Mon, 01 Sep 2025 10:00:00 GMT",
            },
        }
        for body in (first, second)
    ]
    data = {"http_interactions": interactions, "recorded_with": "VCR 6.3.1"}
    cassette = load_cassette(_write(tmp_path, "tool.yml", yaml.safe_dump(data)))
    wire_server.add(*replies_for(cassette, chunk_size=11))
    agent = http_agent("openai:gpt-4.1-nano", wire_server, api_key="k", tools=[weather])
    result = await agent.run("Weather in Lima?")
    assert result.output == "Lima: 12 C."
    assert [(c.id, c.arguments) for c in result.rounds[0].calls] == [("call_r1", {"city": "Lima"})]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (80, 14)
    tool_message = wire_server.bodies()[1]["messages"][-1]
    assert tool_message == {"role": "tool", "tool_call_id": "call_r1", "content": "12 C"}
