"""Replay of any Ollama /api/chat recording that holds requests and responses.

``replay_ollama(path, server)`` (tests/support/replay/ollama.py) takes a cassette
in any format the loader reads whose last request carries the whole tool exchange,
and checks the run against it.

It is exercised here on an httprr trace written in this file in the shape of
langchaingo's ``TestCloudToolCall.httprr`` (ollama.com, HTTP/2.0 status lines,
capitalised headers, a call with ``id`` and ``function.index``, a ``thinking``
field, sent back with the call), streamed and not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.replay.ollama import recorded_text, replay_ollama
from tests.support.servers import WireServer

# --------------------------------------------------------------------------- a trace to replay

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "getWeather",
            "description": "Get the current weather for a location.",
            "parameters": {
                "type": "object",
                "required": ["location"],
                "properties": {"location": {"type": "string", "description": "The city"}},
            },
        },
    }
]
CALL = {
    "id": "call_w1",
    "function": {"index": 0, "name": "getWeather", "arguments": {"location": "Oslo"}},
}
RESULT = '{"temperature": 3, "condition": "snow"}'
ANSWER = "Oslo: **3 °C** and snowing."


def _request(messages: list[dict[str, Any]], stream: bool) -> bytes:
    body = json.dumps(
        {"model": "gpt-oss:120b", "messages": messages, "stream": stream, "tools": TOOLS}
    ).encode()
    head = (
        "POST https://ollama.com/api/chat HTTP/1.1\r\nHost: ollama.com\r\n"
        "User-Agent: langchaingo-httprr\n"  # the bare LF newer recordings have
        f"Content-Length: {len(body)}\r\nContent-Type: application/json\r\n\r\n"
    )
    return head.encode() + body


def _response(lines: list[dict[str, Any]], stream: bool) -> bytes:
    if not stream:
        body = json.dumps(lines[0]).encode() + b"\n"
        head = f"HTTP/2.0 200 OK\r\nContent-Length: {len(body)}\r\nContent-Type: application/json"
        return (head + "\r\nServer: Google Frontend\r\n\r\n").encode() + body
    chunked = b""
    for line in lines:
        data = json.dumps(line).encode() + b"\n"
        chunked += b"%x\r\n" % len(data) + data + b"\r\n"
    head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/x-ndjson"
    return (head + "\r\n\r\n").encode() + chunked + b"0\r\n\r\n"


def _trace(stream: bool) -> bytes:
    user = {"role": "user", "content": "What's the weather like in Oslo?"}
    done = {"done": True, "done_reason": "stop", "prompt_eval_count": 145, "eval_count": 44}
    first = [
        {
            "model": "gpt-oss:120b",
            "message": {
                "role": "assistant",
                "content": "",
                "thinking": "Use getWeather.",
                "tool_calls": [CALL],
            },
            "done": False,
        },
        {"model": "gpt-oss:120b", "message": {"role": "assistant", "content": ""}, **done},
    ]
    second = [
        {"model": "gpt-oss:120b", "message": {"role": "assistant", "content": p}, "done": False}
        for p in ("Oslo: **3 °C**", " and snowing.")
    ]
    second.append(
        {"model": "gpt-oss:120b", "message": {"role": "assistant", "content": ""}, **done}
    )
    if not stream:  # one body each: everything of the stream in a single object
        first = [{**first[0], **done}]
        second = [{**second[-1], "message": {"role": "assistant", "content": ANSWER}}]
    history = [
        user,
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "tool", "content": RESULT},
    ]
    out = b"httprr trace v1\n"
    for request, response in (
        (_request([user], stream), _response(first, stream)),
        (_request(history, stream), _response(second, stream)),
    ):
        out += f"{len(request)} {len(response)}\n".encode() + request + response
    return out


@pytest.mark.parametrize("stream", [False, True])
async def test_replay_cloud_tool_call_trace(
    tmp_path: Path, wire_server: WireServer, stream: bool
) -> None:
    path = tmp_path / "TestCloudToolCall.httprr"
    path.write_bytes(_trace(stream))
    cassette = await replay_ollama(path, wire_server)
    assert recorded_text(cassette.responses[-1]) == ANSWER
    sent = wire_server.bodies()[1]["messages"]
    # The recorded call id goes back with the call and with its result, and the
    # reasoning that led to the call goes back with the call.
    assert sent[1]["tool_calls"][0]["id"] == "call_w1"
    assert sent[1]["thinking"] == "Use getWeather."
    assert sent[2] == {
        "role": "tool",
        "tool_name": "getWeather",
        "tool_call_id": "call_w1",
        "content": RESULT,
    }
