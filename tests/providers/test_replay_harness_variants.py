"""The recorded-traffic replay tests on request shapes other SDKs write.

The replay drivers of ``tests/support/replay`` (openai, gemini) take any cassette
path; here they run on cassettes written in this file around small
payloads, with the request shapes other clients record: OpenAI ``developer``
system role and content as lists of text parts (also in tool results), Gemini
declarations with ``parametersJsonSchema`` (Google's JS SDK) in a HAR log.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.support.replay import gemini, openai
from tests.support.servers import WireServer

WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "Weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"],
        },
    },
}


def _parts(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def _chat(message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5},
    }


async def test_openai_developer_role_and_text_parts(
    tmp_path: Path, wire_server: WireServer
) -> None:
    call = {
        "id": "call_d1",
        "type": "function",
        "function": {"name": "weather", "arguments": '{"location":"Rome"}'},
    }
    start = [
        {"role": "developer", "content": _parts("Be brief.")},
        {"role": "user", "content": _parts("Weather in Rome?")},
    ]
    history = [
        *start,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_d1", "content": _parts("40 C in Rome")},
    ]
    replies = [
        _chat({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"),
        _chat({"role": "assistant", "content": "Hot: 40 C."}, "stop"),
    ]
    interactions = [
        {
            "request": {
                "method": "POST",
                "uri": "https://api.openai.com/v1/chat/completions",
                "body": json.dumps({"model": "gpt-4.1", "messages": messages, "tools": [WEATHER]}),
            },
            "response": {
                "status": {"code": 200, "message": "OK"},
                "headers": {"content-type": ["application/json"]},
                "body": {"string": json.dumps(reply)},
            },
        }
        for messages, reply in ((start, replies[0]), (history, replies[1]))
    ]
    path = tmp_path / "developer.yaml"
    path.write_text(yaml.safe_dump({"interactions": interactions, "version": 1}))
    await openai.replay_tool_cassette(path, wire_server)
    assert wire_server.bodies()[0]["messages"][0] == {"role": "system", "content": "Be brief."}


async def test_gemini_har_with_parameters_json_schema(
    tmp_path: Path, wire_server: WireServer
) -> None:
    declaration = {
        "name": "passphrase_tool",
        "description": "Needs the passphrase.",
        "parametersJsonSchema": {
            "type": "object",
            "properties": {"passphrase": {"type": "string"}},
            "required": ["passphrase"],
        },
    }
    user = {"role": "user", "parts": [{"text": "The passphrase is 'cake'."}]}
    call = {"functionCall": {"name": "passphrase_tool", "args": {"passphrase": "cake"}}}
    model = {"role": "model", "parts": [{**call, "thoughtSignature": "CrIBAXLI"}]}
    result = {"functionResponse": {"name": "passphrase_tool", "response": {"result": "A lie."}}}

    def reply(part: dict[str, Any]) -> str:
        candidate = {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}
        usage = {"promptTokenCount": 64, "candidatesTokenCount": 19}
        return json.dumps({"candidates": [candidate], "usageMetadata": usage}, indent=2)

    exchanges = [
        ([user], reply({**call, "thoughtSignature": "CrIBAXLI"})),
        ([user, model, {"role": "user", "parts": [result]}], reply({"text": "It is a lie."})),
    ]
    entries = [
        {
            "request": {
                "method": "POST",
                "url": "https://generativelanguage.googleapis.com/v1beta/models/"
                "gemini-2.5-flash:generateContent",
                "headers": [{"name": "x-goog-api-key", "value": "[REDACTED]"}],
                "postData": {
                    "mimeType": "application/json",
                    "text": json.dumps(
                        {"contents": contents, "tools": [{"functionDeclarations": [declaration]}]}
                    ),
                },
            },
            "response": {
                "status": 200,
                # Polly keeps the header although the text it saved is decoded.
                "headers": [{"name": "content-encoding", "value": "gzip"}],
                "content": {"mimeType": "application/json; charset=UTF-8", "text": text},
            },
        }
        for contents, text in exchanges
    ]
    path = tmp_path / "tool-error.har"
    path.write_text(json.dumps({"log": {"version": "1.2", "entries": entries}}))
    await gemini.replay_tool_cassette(path, wire_server, stream=False)
