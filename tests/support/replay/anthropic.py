"""Replaying recorded Anthropic Messages conversations, and what they say.

* ``anthropic_*`` read a recording: the tool exchanges, the final text;
* :func:`normalize_anthropic` reduces a request body to what must be equivalent
  between the recorded request and ours: roles, texts, call ids, calls, results,
  thinking blocks / signatures and tool declarations, up to key order;
* :func:`replay_tool_cassette` runs a recorded conversation and checks it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nbagent import Agent, RunResult
from nbagent.messages import Usage
from tests.support.agents import http_agent
from tests.support.cassettes import DATA, RecordedTools, load_cassette, replies_for
from tests.support.replay.schemas import clean_schema
from tests.support.servers import RecordedResponse, WireServer


def anthropic_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content or [])


def _result_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return "" if content is None else str(content)


def anthropic_exchanges(body: dict[str, Any]) -> list[tuple[str, dict[str, Any], str]]:
    """(name, input, result) of every tool exchange in a recorded Messages request."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    out = []
    for message in body["messages"]:
        for block in anthropic_blocks(message["content"]):
            if block.get("type") == "tool_use":
                calls[block["id"]] = (block["name"], block.get("input") or {})
            elif block.get("type") == "tool_result":
                name, arguments = calls[block["tool_use_id"]]
                out.append((name, arguments, _result_text(block.get("content"))))
    return out


def anthropic_text(response: RecordedResponse) -> str:
    """The answer text of a recorded Messages response (streamed or not)."""
    if not response.is_stream:
        return "".join(
            b.get("text", "") for b in response.json()["content"] if b.get("type") == "text"
        )
    text = []
    for line in response.text.splitlines():
        if line.startswith("data:"):
            data = json.loads(line[5:])
            delta = data.get("delta") or {}
            if data.get("type") == "content_block_delta" and delta.get("type") == "text_delta":
                text.append(delta["text"])
    return "".join(text)


def normalize_anthropic(body: dict[str, Any]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for message in body["messages"]:
        blocks = []
        for block in anthropic_blocks(message["content"]):
            kind = block.get("type")
            if kind == "text":
                if block["text"].strip():
                    blocks.append({"text": block["text"]})
            elif kind == "tool_use":
                blocks.append(
                    {"tool_use": block["id"], "name": block["name"], "input": block.get("input")}
                )
            elif kind == "tool_result":
                blocks.append(
                    {
                        "tool_result": block["tool_use_id"],
                        "content": _result_text(block.get("content")),
                        "is_error": bool(block.get("is_error")),
                    }
                )
            elif kind in ("thinking", "redacted_thinking"):
                blocks.append({k: block.get(k) for k in ("type", "thinking", "signature", "data")})
        if messages and messages[-1]["role"] == message["role"]:
            messages[-1]["blocks"] += blocks  # the API merges same-role turns
        else:
            messages.append({"role": message["role"], "blocks": blocks})
    system = body.get("system")
    if isinstance(system, list):
        system = "".join(b.get("text", "") for b in system)
    tools = sorted(
        (
            {
                "name": t["name"],
                "description": t.get("description") or "",
                "input_schema": clean_schema(t.get("input_schema")),
            }
            for t in body.get("tools") or []
        ),
        key=lambda t: t["name"],
    )
    return {"system": (system or "").strip() or None, "messages": messages, "tools": tools}


# --------------------------------------------------------------------------- replay

KEY = "test-key-anthropic-3c1f9e"


def agent_for(first: dict, tools: list, url: str) -> Agent:
    """An agent set up as the recorded first request was (model, system, limits, thinking)."""
    system = first.get("system")
    if isinstance(system, list):
        system = "".join(b.get("text", "") for b in system)
    extra = {k: first[k] for k in ("thinking", "output_config") if k in first}
    return http_agent(
        "anthropic:" + first["model"],
        url,
        api_key=KEY,
        tools=tools,
        system=system or None,
        stream=bool(first.get("stream")),
        max_output_tokens=first["max_tokens"],
        extra_body=extra,
        backoff=0.01,
        store=None,  # no history file: these tests are about the wire
    )


def _recorded_usage(response) -> Usage:
    """Input (incl. cache) and output tokens; streamed counts are cumulative (last wins)."""
    if not response.is_stream:
        usages = [response.json()["usage"]]
    else:
        usages = []
        for line in response.text.splitlines():
            if line.startswith("data:"):
                data = json.loads(line[5:])
                usages.append((data.get("message") or {}).get("usage") or data.get("usage") or {})
    counts: dict = {}
    for usage in usages:
        counts.update({k: v for k, v in usage.items() if isinstance(v, int)})
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return Usage(sum(counts.get(k, 0) for k in keys), counts.get("output_tokens", 0))


def prompt(first: dict) -> str:
    """The recorded first user message's text."""
    return "".join(b.get("text", "") for b in anthropic_blocks(first["messages"][0]["content"]))


async def replay_tool_cassette(path: str | Path, server: WireServer) -> RunResult:
    """Run the recorded tool conversation at ``path`` and check it against the recording.

    The answer, every call's arguments, the usage per round, and every request
    (history up to key order and spelling, thinking blocks with signatures, headers).
    """
    cassette = load_cassette(DATA / path)
    recorded = [r.json() for r in cassette.requests]
    first = recorded[0]
    tools = RecordedTools()
    for tool_name, arguments, result in anthropic_exchanges(recorded[-1]):
        tools.add_result(tool_name, arguments, result)
    declared = [
        tools.make_tool(t["name"], t.get("description"), t["input_schema"]) for t in first["tools"]
    ]
    server.add(*replies_for(cassette))

    agent = agent_for(first, declared, server.url)
    result = await agent.run(prompt(first))

    assert result.stop_reason == "complete"
    assert result.output == anthropic_text(cassette.responses[-1])
    assert server.count == len(cassette.interactions)
    # Every recorded call was executed with the recorded arguments.
    assert tools.calls == [(n, a) for n, a, _ in anthropic_exchanges(recorded[-1])]
    # Usage per round and in total, as the recorded responses report it.
    expected = [_recorded_usage(r) for r in cassette.responses]
    assert [r.usage for r in result.rounds] == expected[:-1]
    assert result.usage == Usage(
        sum(u.input_tokens for u in expected), sum(u.output_tokens for u in expected)
    )
    for ours, theirs, request in zip(server.bodies(), recorded, server.requests, strict=True):
        assert normalize_anthropic(ours) == normalize_anthropic(theirs)
        assert ours["model"] == theirs["model"]
        assert ours["stream"] == bool(theirs.get("stream"))
        assert request.path == "/v1/messages"
        assert request.headers["x-api-key"] == KEY
        assert request.headers["anthropic-version"] == "2023-06-01"
        assert KEY not in request.url
    return result
