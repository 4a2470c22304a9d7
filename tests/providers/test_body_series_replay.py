"""Replay of response bodies without requests (Prism-style ``-1``, ``-2``... series), any API.

``replay_bodies(provider, paths, server, stream=...)`` (tests/support/replay/bodies.py)
reads the calls and the final text out of the recorded bodies with a parser of its
own, serves the bodies in order, and checks the run made exactly the recorded calls,
sent every result back and ended with the recorded text.

Exercised on the real Prism Ollama series in ``data/cassettes`` and on Anthropic,
Gemini and OpenAI series written here in each API's exact wire format.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.cassettes import DATA
from tests.support.replay.bodies import replay_bodies
from tests.support.servers import WireServer

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
