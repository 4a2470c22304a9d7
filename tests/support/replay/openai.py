"""Replaying recorded OpenAI Chat Completions conversations (any cassette format).

``replay_tool_cassette(path, server)`` gives the agent tools with the recorded names
and schemas that return the recorded results, serves the recorded responses one by
one, and checks the run against the recording.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nbagent import Agent, RunResult
from tests.support.agents import http_agent
from tests.support.cassettes import (
    DATA,
    Cassette,
    RecordedResults,
    load_cassette,
    recorded_tool,
    replies_for,
)
from tests.support.servers import WireServer

KEY = "sk-replay-key"


def final_text(cassette: Cassette) -> str:
    """The answer text of the last recorded response (parsed independently of nbagent)."""
    response = cassette.responses[-1]
    if not response.is_stream:
        return response.json()["choices"][0]["message"]["content"] or ""
    parts = []
    for line in response.text.splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[6:]).get("choices") or []:
                parts.append((choice.get("delta") or {}).get("content") or "")
    return "".join(parts)


def _text(content: Any) -> Any:
    """Message content as text: recorders may keep it as a list of text parts."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content


def _role(message: dict[str, Any]) -> str:
    # Newer SDKs send the system prompt as "developer"; nbagent sends "system".
    return "system" if message["role"] == "developer" else message["role"]


def recorded_results(cassette: Cassette) -> RecordedResults:
    """Tool results of the recording: calls from responses, results from later requests."""
    calls: dict[str, tuple[str, Any]] = {}
    for request in cassette.requests:
        for message in request.json()["messages"]:
            for call in message.get("tool_calls") or []:
                args = json.loads(call["function"]["arguments"] or "{}")
                calls[call["id"]] = (call["function"]["name"], args)
    results = RecordedResults()
    seen = set()
    for request in cassette.requests:
        for message in request.json()["messages"]:
            if message["role"] == "tool" and message["tool_call_id"] not in seen:
                seen.add(message["tool_call_id"])
                name, args = calls[message["tool_call_id"]]
                results.add(name, args, _text(message["content"]))
    return results


def agent_for(cassette: Cassette, server: WireServer, results: RecordedResults) -> Agent:
    """An agent with the recorded system prompt and tools (answering as recorded)."""
    first = cassette.requests[0].json()
    tools = [
        recorded_tool(
            t["function"]["name"],
            t["function"].get("description", ""),
            t["function"].get("parameters"),
            results,
        )
        for t in first.get("tools", [])
    ]
    system = next((_text(m["content"]) for m in first["messages"] if _role(m) == "system"), None)
    return http_agent(
        f"openai:{first['model']}",
        server,
        api_key=KEY,
        tools=tools,
        system=system,
        stream=bool(first.get("stream")),
    )


def normal(messages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What must match between a recorded and a sent history."""
    out: list[tuple[Any, ...]] = []
    for m in messages:
        role = _role(m)
        if role == "assistant" and not m.get("tool_calls") and not m.get("content"):
            continue  # llm records an empty assistant message before its tool call
        if role == "assistant" and m.get("tool_calls"):
            calls = [
                (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
                for c in m["tool_calls"]
            ]
            out.append(("assistant", calls))
        elif role == "tool":
            out.append(("tool", m["tool_call_id"], _text(m["content"])))
        else:
            out.append((role, _text(m["content"])))
    return out


def declarations(body: dict[str, Any]) -> dict[str, Any]:
    """The tools declared in a request: name -> (description, property types, required)."""
    out = {}
    for t in body.get("tools", []):
        f = t["function"]
        params = f.get("parameters") or {}
        props = {k: v.get("type") for k, v in (params.get("properties") or {}).items()}
        out[f["name"]] = (f.get("description"), props, sorted(params.get("required") or []))
    return out


async def replay_tool_cassette(path: str | Path, server: WireServer) -> RunResult:
    """Run the recorded tool conversation at ``path`` (any cassette format) and check it.

    The run must end with the recorded answer, and every request nbagent sent must be
    equivalent to the recorded one (roles, call ids, arguments, results, tools).
    """
    cassette = load_cassette(DATA / path)
    server.add(*replies_for(cassette))
    results = recorded_results(cassette)
    agent = agent_for(cassette, server, results)
    first_prompt = next(
        _text(m["content"]) for m in cassette.requests[0].json()["messages"] if m["role"] == "user"
    )

    result = await agent.run(first_prompt)

    assert result.output == final_text(cassette)
    assert result.stop_reason == "complete"
    assert server.count == len(cassette.requests)
    assert len(result.rounds) == len(cassette.requests) - 1
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0
    for sent, recorded in zip(server.requests, cassette.requests, strict=True):
        assert sent.path == "/v1/chat/completions"
        assert sent.headers["authorization"] == f"Bearer {KEY}"
        ours, theirs = sent.json(), recorded.json()
        assert normal(ours["messages"]) == normal(theirs["messages"])
        assert declarations(ours) == declarations(theirs)
        assert ours["model"] == theirs["model"]
        assert bool(ours.get("stream")) == bool(theirs.get("stream"))
        if ours.get("stream"):
            assert ours["stream_options"] == {"include_usage": True}
    return result
