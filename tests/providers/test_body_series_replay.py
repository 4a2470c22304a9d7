"""Replay of response bodies without requests (Prism-style ``-1``, ``-2``... series), any API.

``replay_bodies(provider, paths, server, stream=...)`` reads the calls and the
final text out of the recorded bodies with a small parser of its own (not
nbagent's), gives the agent tools of the recorded names whose parameters are
inferred from the recorded arguments, serves the bodies in order, and checks
that the run executed exactly the recorded calls, sent every result back in the
next request and ended with the recorded text.

Exercised on the real Prism Ollama series in ``data/cassettes`` and on Anthropic,
Gemini and OpenAI series written here in each API's exact wire format.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nbagent import Agent

from .anthropic_gemini_replay import RecordedTools, gemini_chunks
from .cassettes import DATA, RecordedResponse, load_bodies
from .wire import WireServer, replies_for

Call = tuple[str, dict[str, Any]]


def _sse_data(response: RecordedResponse) -> list[Any]:
    out = []
    for line in response.text.splitlines():
        if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
            out.append(json.loads(line[5:]))
    return out


def parse_openai(response: RecordedResponse) -> tuple[str, list[Call]]:
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
    url = server.url + ("/v1" if provider == "openai" else "")
    agent = Agent(
        f"{provider}:{model}", base_url=url, api_key="replay-key", tools=declared, stream=stream
    )

    result = await agent.run("Go.")

    assert result.output == parsed[-1][0]
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


# ---------------------------------------------------------------- real Prism Ollama series


@pytest.mark.parametrize(
    ("names", "stream"),
    [
        (["stream-with-tools-1.sse", "stream-with-tools-2.sse", "stream-with-tools-3.sse"], True),
        (
            [
                "generate-text-with-multiple-tools-1.json",
                "generate-text-with-multiple-tools-2.json",
            ],
            False,
        ),
    ],
)
async def test_prism_ollama_series(wire_server: WireServer, names: list[str], stream: bool) -> None:
    result = await replay_bodies(
        "ollama", [DATA / "prism/ollama" / n for n in names], wire_server, stream=stream
    )
    assert result.rounds and result.output


# --------------------------------------------------------------------------- series written here


def _write(tmp_path: Path, bodies: list[str]) -> list[Path]:
    paths = []
    for index, body in enumerate(bodies, 1):
        path = tmp_path / f"series-{index}.json"
        path.write_text(body, encoding="utf-8")
        paths.append(path)
    return paths


def _anthropic_sse(*events: dict[str, Any]) -> str:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


def _anthropic_message(content: list[dict[str, Any]], stop: str) -> str:
    usage = {"input_tokens": 446, "output_tokens": 84}
    return json.dumps(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": content,
            "stop_reason": stop,
            "usage": usage,
        }
    )


async def test_anthropic_json_series(tmp_path: Path, wire_server: WireServer) -> None:
    """Shaped like Prism's anthropic generate-text-with-multiple-tools-{1,2,3}.json."""
    bodies = [
        _anthropic_message(
            [
                {"type": "text", "text": "Let me search."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "search",
                    "input": {"query": "Tigers game"},
                },
            ],
            "tool_use",
        ),
        _anthropic_message(
            [
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "weather",
                    "input": {"city": "Detroit"},
                }
            ],
            "tool_use",
        ),
        _anthropic_message([{"type": "text", "text": "3 PM, and no coat."}], "end_turn"),
    ]
    result = await replay_bodies("anthropic", _write(tmp_path, bodies), wire_server, stream=False)
    assert [c.id for r in result.rounds for c in r.calls] == ["toolu_1", "toolu_2"]


async def test_anthropic_sse_series(tmp_path: Path, wire_server: WireServer) -> None:
    start = {
        "type": "message_start",
        "message": {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "content": [],
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    }
    first = _anthropic_sse(
        start,
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_9", "name": "weather", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"city": "Pa'},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": 'ris"}'},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 20},
        },
        {"type": "message_stop"},
    )
    second = _anthropic_sse(
        start,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "Sunny in Paris."},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 5},
        },
        {"type": "message_stop"},
    )
    await replay_bodies("anthropic", _write(tmp_path, [first, second]), wire_server, stream=True)


async def test_gemini_sse_series_with_thoughts(tmp_path: Path, wire_server: WireServer) -> None:
    """Shaped like Prism's gemini stream-with-tools-thought-{1,2}.json: SSE in a .json file,
    thought summaries, a signed functionCall, a trailing empty STOP part."""

    def event(parts: list[dict[str, Any]], finish: str | None = None) -> str:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        usage = {"promptTokenCount": 131, "candidatesTokenCount": 15, "thoughtsTokenCount": 95}
        return "data: " + json.dumps({"candidates": [candidate], "usageMetadata": usage}) + "\n\n"

    first = (
        event([{"text": "**Checking the weather**", "thought": True}])
        + event(
            [
                {
                    "functionCall": {"name": "weather", "args": {"city": "San Francisco"}},
                    "thoughtSignature": "Eq0ECqoEAdHt",
                }
            ]
        )
        + event([{"text": ""}], "STOP")
    )
    second = (
        event([{"text": "It is 75F"}])
        + event([{"text": " and sunny."}])
        + event([{"text": ""}], "STOP")
    )
    await replay_bodies(
        "gemini", _write(tmp_path, [first, second]), wire_server, stream=True, model="gemini-3-pro"
    )
    sent = wire_server.bodies()[1]["contents"][1]["parts"][0]
    assert sent["thoughtSignature"] == "Eq0ECqoEAdHt"


async def test_openai_sse_series(tmp_path: Path, wire_server: WireServer) -> None:
    def data(delta: dict[str, Any], finish: str | None = None) -> str:
        chunk = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f"data: {json.dumps(chunk)}\n\n"

    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "weather", "arguments": '{"city":'},
    }
    first = (
        data({"role": "assistant", "tool_calls": [call]})
        + data({"tool_calls": [{"index": 0, "function": {"arguments": ' "Rome"}'}}]})
        + data({}, "tool_calls")
        + "data: [DONE]\n\n"
    )
    second = data({"content": "Rome is warm."}) + data({}, "stop") + "data: [DONE]\n\n"
    await replay_bodies("openai", _write(tmp_path, [first, second]), wire_server, stream=True)
