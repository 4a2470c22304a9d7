"""Replaying response bodies without requests (Prism-style ``-1``, ``-2``... series), any API.

``replay_bodies(provider, paths, server, stream=...)`` reads the calls and the
final text out of the recorded bodies with a small parser of its own (not
nbagent's), gives the agent tools of the recorded names whose parameters are
inferred from the recorded arguments, serves the bodies in order, and checks
that the run executed exactly the recorded calls, sent every result back in the
next request and ended with the recorded text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.agents import http_agent
from tests.support.cassettes import RecordedTools, load_bodies, replies_for, split_think
from tests.support.replay.gemini import gemini_chunks
from tests.support.servers import RecordedResponse, WireServer

Call = tuple[str, dict[str, Any]]


def _sse_data(response: RecordedResponse) -> list[Any]:
    out = []
    for line in response.text.splitlines():
        if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
            out.append(json.loads(line[5:]))
    return out


def parse_openai(response: RecordedResponse) -> tuple[str, list[Call]]:
    """The text and the calls of a recorded openai response body (streamed or not)."""
    if not response.text.lstrip().startswith(("data:", ":")):
        message = response.json()["choices"][0]["message"]
        calls = [
            (c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
            for c in message.get("tool_calls") or []
        ]
        return message.get("content") or "", calls
    text, pieces = [], {}
    for chunk in _sse_data(response):
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            text.append(delta.get("content") or "")
            for item in delta.get("tool_calls") or []:
                entry = pieces.setdefault(item.get("index", len(pieces)), ["", []])
                entry[0] = entry[0] or (item.get("function") or {}).get("name") or ""
                entry[1].append((item.get("function") or {}).get("arguments") or "")
    calls = [(name, json.loads("".join(args) or "{}")) for name, args in pieces.values()]
    return "".join(text), calls


def parse_anthropic(response: RecordedResponse) -> tuple[str, list[Call]]:
    """The text and the calls of a recorded anthropic response body (streamed or not)."""
    if "event:" not in response.text[:200] and not response.text.startswith("data:"):
        blocks = response.json()["content"]
        text = "".join(b.get("text", "") for b in blocks if b["type"] == "text")
        return text, [(b["name"], b["input"]) for b in blocks if b["type"] == "tool_use"]
    text, calls, parts = [], [], {}
    for event in _sse_data(response):
        if event["type"] == "content_block_start" and event["content_block"]["type"] == "tool_use":
            parts[event["index"]] = (event["content_block"]["name"], [])
        elif event["type"] == "content_block_delta":
            delta = event["delta"]
            if delta["type"] == "text_delta":
                text.append(delta["text"])
            elif delta["type"] == "input_json_delta":
                parts[event["index"]][1].append(delta["partial_json"])
        elif event["type"] == "content_block_stop" and event["index"] in parts:
            name, args = parts.pop(event["index"])
            calls.append((name, json.loads("".join(args) or "{}")))
    return "".join(text), calls


def parse_gemini(response: RecordedResponse) -> tuple[str, list[Call]]:
    """The text and the calls of a recorded gemini response body (streamed or not)."""
    text, calls = [], []
    for chunk in gemini_chunks(response):
        for candidate in chunk.get("candidates") or []:
            for part in (candidate.get("content") or {}).get("parts") or []:
                if "functionCall" in part:
                    calls.append(
                        (part["functionCall"]["name"], part["functionCall"].get("args") or {})
                    )
                elif "text" in part and not part.get("thought"):
                    text.append(part["text"])
    return "".join(text), calls


def parse_ollama(response: RecordedResponse) -> tuple[str, list[Call]]:
    """The text and the calls of a recorded ollama response body (streamed or not)."""
    text, calls = [], []
    for line in response.body.splitlines():
        if line.strip():
            message = json.loads(line).get("message") or {}
            text.append(message.get("content") or "")
            calls += [
                (c["function"]["name"], c["function"].get("arguments") or {})
                for c in message.get("tool_calls") or []
            ]
    return "".join(text), calls


PARSERS = {
    "openai": parse_openai,
    "anthropic": parse_anthropic,
    "gemini": parse_gemini,
    "ollama": parse_ollama,
}
_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array"}


def _schema(calls: list[Call]) -> dict[str, Any]:
    """Parameters inferred from the recorded arguments: keys present in every call are required."""
    properties: dict[str, Any] = {}
    for _, arguments in calls:
        for key, value in arguments.items():
            properties.setdefault(key, {"type": _JSON_TYPES.get(type(value), "object")})
    required = [k for k in properties if all(k in a for _, a in calls)]
    return {"type": "object", "properties": properties, "required": required}


async def replay_bodies(
    provider: str, paths: list[Path], server: WireServer, *, stream: bool, model: str = "m"
) -> Any:
    """Serve the recorded bodies at ``paths`` to a run and check it made the recorded calls."""
    cassette = load_bodies(paths)
    parsed = [PARSERS[provider](r) for r in cassette.responses]
    recorded_calls = [call for _, calls in parsed for call in calls]
    tools = RecordedTools()
    by_name: dict[str, list[Call]] = {}
    for index, (name, arguments) in enumerate(recorded_calls):
        by_name.setdefault(name, []).append((name, arguments))
        tools.add_result(name, arguments, f"result {index} of {name}")
    declared = [tools.make_tool(n, f"The {n} tool.", _schema(c)) for n, c in by_name.items()]
    server.add(*replies_for(cassette))
    agent = http_agent(
        f"{provider}:{model}", server, api_key="replay-key", tools=declared, stream=stream
    )

    result = await agent.run("Go.")

    assert result.output == split_think(parsed[-1][0])[1]  # a <think> block is not the answer
    assert tools.calls == recorded_calls
    assert server.count == len(paths)
    # Each request after a round of calls carries the results of that round.
    results_so_far = 0
    for body, (_, calls) in zip(server.bodies()[1:], parsed, strict=False):
        results_so_far += len(calls)
        sent = json.dumps(body)
        for index in range(results_so_far):
            assert f"result {index} of " in sent
    return result
