"""Replay of any Ollama /api/chat recording that holds requests and responses.

``replay_ollama(path)`` takes a cassette in any format the loader reads (httprr,
VCR, go-vcr, HAR) whose last request carries the whole tool exchange: the agent
gets tools named and shaped like the recorded declarations that return the
recorded results, the server replays the responses in order, and the run must
end with the recorded final text, having run the recorded calls, with every
request equivalent to the recorded one (roles, calls, results, declarations).

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

from nbagent import Agent

from .anthropic_gemini_replay import RecordedTools
from .cassettes import Cassette, RecordedResponse, load_cassette
from .wire import WireServer, replies_for


def _response_lines(response: RecordedResponse) -> list[dict[str, Any]]:
    return [json.loads(line) for line in response.body.splitlines() if line.strip()]


def recorded_text(response: RecordedResponse) -> str:
    return "".join(m.get("message", {}).get("content") or "" for m in _response_lines(response))


def recorded_exchanges(body: dict[str, Any]) -> list[tuple[str, dict[str, Any], str]]:
    """(name, arguments, result) per tool message of a recorded request, in order.

    Results are matched by ``tool_call_id`` when present, else by position after
    the assistant turn that made the calls (older recordings carry no ids)."""
    out = []
    pending: list[dict[str, Any]] = []
    for message in body["messages"]:
        if message["role"] == "assistant" and message.get("tool_calls"):
            pending = list(message["tool_calls"])
        elif message["role"] == "tool" and pending:
            call = next((c for c in pending if c.get("id") == message.get("tool_call_id")), None)
            call = call or pending[0]
            pending.remove(call)
            arguments = call["function"].get("arguments") or {}
            if isinstance(arguments, str):
                arguments = json.loads(arguments or "{}")
            out.append((call["function"]["name"], arguments, message["content"]))
    return out


def _normal(body: dict[str, Any]) -> dict[str, Any]:
    """What must match between a recorded and a sent /api/chat body."""
    messages = []
    for m in body["messages"]:
        item: dict[str, Any] = {"role": m["role"], "content": m.get("content") or ""}
        if m.get("tool_calls"):
            item["calls"] = [
                (c["function"]["name"], c["function"].get("arguments") or {})
                for c in m["tool_calls"]
            ]
        messages.append(item)
    tools = sorted(
        (
            t["function"]["name"],
            t["function"].get("description") or "",
            sorted((t["function"].get("parameters") or {}).get("properties") or {}),
            sorted((t["function"].get("parameters") or {}).get("required") or []),
        )
        for t in body.get("tools") or []
    )
    return {"model": body["model"], "messages": messages, "tools": tools}


async def replay_ollama(path: str | Path, server: WireServer) -> Cassette:
    cassette = load_cassette(path)
    recorded = [r.json() for r in cassette.requests]
    first = recorded[0]
    tools = RecordedTools()
    for name, arguments, result in recorded_exchanges(recorded[-1]):
        tools.add_result(name, arguments, result)
    declared = [
        tools.make_tool(
            t["function"]["name"], t["function"].get("description"), t["function"].get("parameters")
        )
        for t in first.get("tools") or []
    ]
    system = next((m["content"] for m in first["messages"] if m["role"] == "system"), None)
    prompt = next(m["content"] for m in first["messages"] if m["role"] == "user")
    server.add(*replies_for(cassette))
    agent = Agent(
        "ollama:" + first["model"],
        base_url=server.url,
        tools=declared,
        system=system,
        stream=first.get("stream", True),  # the server's default is to stream
        store=None,
    )

    result = await agent.run(prompt)

    assert result.stop_reason == "complete"
    assert result.output == recorded_text(cassette.responses[-1])
    assert server.count == len(cassette.interactions)
    assert tools.calls == [(n, a) for n, a, _ in recorded_exchanges(recorded[-1])]
    for ours, theirs in zip(server.bodies(), recorded, strict=True):
        assert _normal(ours) == _normal(theirs)
        assert ours["stream"] is theirs.get("stream", True)
    return cassette


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
