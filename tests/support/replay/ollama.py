"""Replaying any Ollama /api/chat recording that holds requests and responses.

``replay_ollama(path, server)`` takes a cassette in any format the loader reads
(httprr, VCR, go-vcr, HAR) whose last request carries the whole tool exchange: the
agent gets tools named and shaped like the recorded declarations that return the
recorded results, the server replays the responses in order, and the run must end
with the recorded final text, having run the recorded calls, with every request
equivalent to the recorded one (roles, calls, results, declarations).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.agents import http_agent
from tests.support.cassettes import Cassette, RecordedTools, load_cassette, replies_for
from tests.support.servers import RecordedResponse, WireServer


def _response_lines(response: RecordedResponse) -> list[dict[str, Any]]:
    return [json.loads(line) for line in response.body.splitlines() if line.strip()]


def recorded_text(response: RecordedResponse) -> str:
    """The answer text of a recorded /api/chat response."""
    return "".join(m.get("message", {}).get("content") or "" for m in _response_lines(response))


def recorded_exchanges(body: dict[str, Any]) -> list[tuple[str, dict[str, Any], str]]:
    """(name, arguments, result) per tool message of a recorded request, in order.

    Results are matched by ``tool_call_id`` when present, else by position after
    the assistant turn that made the calls (older recordings carry no ids).
    """
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


def normal(body: dict[str, Any]) -> dict[str, Any]:
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
    """Run the recorded tool conversation at ``path`` and check it against the recording."""
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
    agent = http_agent(
        "ollama:" + first["model"],
        server,
        api_key=None,
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
        assert normal(ours) == normal(theirs)
        assert ours["stream"] is theirs.get("stream", True)
    return cassette
