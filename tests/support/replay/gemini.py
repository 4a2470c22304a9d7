"""Replaying recorded Gemini conversations, and what they say.

* ``gemini_*`` read a recording: the function exchanges, the chunks, the final text;
* :func:`normalize_gemini` reduces a request body to what must be equivalent between
  the recorded request and ours: roles, texts, calls and results in order,
  thoughtSignatures on the same parts (as bytes), declarations up to key order and
  spelling (``function_call`` vs ``functionCall``, ``STRING`` vs ``string``, titles);
* :func:`replay_tool_cassette` runs a recorded conversation and checks it.

Call ids: these recordings carry no server-made ``functionCall.id`` (the ids in the
recorded requests were made up by each client), so nbagent must send none either
and pair responses by position, which is what is checked.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from nbagent import Agent, RunResult
from nbagent.messages import Usage
from tests.support.agents import http_agent
from tests.support.cassettes import DATA, RecordedTools, load_cassette, replies_for
from tests.support.replay.schemas import clean_schema
from tests.support.servers import RecordedResponse, WireServer

KEY = "test-key-gemini-77d2a0"


def _camel(part: dict[str, Any]) -> dict[str, Any]:
    """proto3 JSON accepts snake_case too (llm-gemini sends ``function_call``)."""
    names = {
        "function_call": "functionCall",
        "function_response": "functionResponse",
        "thought_signature": "thoughtSignature",
    }
    return {names.get(k, k): v for k, v in part.items()}


def _response_value(response: Any) -> Any:
    """``{"output": x}``, ``{"return_value": x}``, ``{"result": x}`` -> x."""
    if isinstance(response, dict) and len(response) == 1:
        return next(iter(response.values()))
    return response


def gemini_exchanges(body: dict[str, Any]) -> list[tuple[str, dict[str, Any], Any]]:
    """(name, args, result) of every function exchange in a recorded request, paired by position."""
    out = []
    pending: list[tuple[str, dict[str, Any]]] = []
    for content in body["contents"]:
        for part in map(_camel, content.get("parts") or []):
            if "functionCall" in part:
                call = part["functionCall"]
                pending.append((call["name"], call.get("args") or {}))
            elif "functionResponse" in part:
                name, args = pending.pop(0)
                out.append((name, args, _response_value(part["functionResponse"].get("response"))))
    return out


def gemini_chunks(response: RecordedResponse) -> list[dict[str, Any]]:
    """The GenerateContentResponse objects of a recorded response (SSE, JSON array or one)."""
    if "event-stream" in response.content_type:
        return [
            json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")
        ]
    data = response.json()
    return data if isinstance(data, list) else [data]


def gemini_text(response: RecordedResponse) -> str:
    text = []
    for chunk in gemini_chunks(response):
        for candidate in chunk.get("candidates") or []:
            for part in (candidate.get("content") or {}).get("parts") or []:
                if "text" in part and not part.get("thought"):
                    text.append(part["text"])
    return "".join(text)


def _signature(value: str | None) -> bytes | None:
    """Signatures compare as bytes: some SDKs re-encode them in URL-safe base64."""
    if value is None:
        return None
    return base64.urlsafe_b64decode(value.replace("+", "-").replace("/", "_") + "==")


def normalize_gemini(body: dict[str, Any]) -> dict[str, Any]:
    contents: list[dict[str, Any]] = []
    for content in body["contents"]:
        parts = []
        for part in map(_camel, content.get("parts") or []):
            if part.get("thought"):
                continue
            item: dict[str, Any] = {}
            if "text" in part:
                if not part["text"] and "thoughtSignature" not in part:
                    continue
                item["text"] = part["text"]
            if "functionCall" in part:
                call = part["functionCall"]
                item["call"] = (call["name"], call.get("args") or {})
            if "functionResponse" in part:
                response = part["functionResponse"]
                item["response"] = (response["name"], _response_value(response.get("response")))
            if "thoughtSignature" in part:
                item["signature"] = _signature(part["thoughtSignature"])
            parts.append(item)
        role = content.get("role", "user")
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"] += parts
        else:
            contents.append({"role": role, "parts": parts})
    system = body.get("systemInstruction") or body.get("system_instruction")
    system_text = "".join(p.get("text", "") for p in (system or {}).get("parts", []))
    declarations = []
    for group in body.get("tools") or []:
        for d in group.get("functionDeclarations") or group.get("function_declarations") or []:
            params = (
                d.get("parameters")
                or d.get("parameters_json_schema")
                or d.get("parametersJsonSchema")
            )
            declarations.append(
                {
                    "name": d["name"],
                    "description": d.get("description") or "",
                    "parameters": clean_schema(params or {"type": "object"}),
                }
            )
    declarations.sort(key=lambda d: d["name"])
    return {"system": system_text or None, "contents": contents, "tools": declarations}


# --------------------------------------------------------------------------- replay


def model_of(cassette) -> str:
    """The model named in the recorded request path."""
    path = cassette.requests[0].path
    return path.split("/models/", 1)[1].split(":", 1)[0]


def agent_for(cassette, tools: list, url: str, *, stream: bool, **options) -> Agent:
    """An agent set up as the recorded first request was (model, system, output cap)."""
    first = cassette.requests[0].json()
    system = "".join(
        p.get("text", "") for p in (first.get("systemInstruction") or {}).get("parts", [])
    )
    generation = first.get("generationConfig") or {}
    return http_agent(
        "gemini:" + model_of(cassette),
        url,
        api_key=KEY,
        tools=tools,
        system=system or None,
        stream=stream,
        max_output_tokens=generation.get("maxOutputTokens"),
        backoff=0.01,
        store=None,  # no history file: these tests are about the wire
        **options,
    )


def prompt(cassette) -> str:
    """The recorded first user message's text."""
    first = cassette.requests[0].json()
    return "".join(p.get("text", "") for p in first["contents"][0]["parts"] if "text" in p)


def recorded_tools(recorded: list[dict]) -> tuple[RecordedTools, list]:
    """Tools declared as recorded, answering with the recorded results."""
    tools = RecordedTools()
    for name, arguments, result in gemini_exchanges(recorded[-1]):
        tools.add_result(name, arguments, result)
    declared = []
    for group in recorded[0].get("tools") or []:
        for d in group.get("functionDeclarations") or group.get("function_declarations") or []:
            params = (
                d.get("parameters")
                or d.get("parametersJsonSchema")  # the JS SDK's name
                or d.get("parameters_json_schema")
            )
            declared.append(tools.make_tool(d["name"], d.get("description"), params))
    return tools, declared


def _recorded_usage(response) -> Usage:
    metadata = [c["usageMetadata"] for c in gemini_chunks(response) if "usageMetadata" in c][-1]
    return Usage(
        metadata.get("promptTokenCount", 0),
        metadata.get("candidatesTokenCount", 0) + metadata.get("thoughtsTokenCount", 0),
    )


def assert_equivalent(server, recorded: list[dict], model: str, *, stream: bool) -> None:
    """Every request sent is equivalent to the recorded one, with no made-up ids."""
    suffix = ":streamGenerateContent?alt=sse" if stream else ":generateContent"
    for ours, theirs, request in zip(server.bodies(), recorded, server.requests, strict=False):
        assert normalize_gemini(ours) == normalize_gemini(theirs)
        assert request.path == f"/v1beta/models/{model}{suffix}"
        assert request.headers["x-goog-api-key"] == KEY
        assert KEY not in request.url
        # No made-up ids go to Gemini; responses are paired by position.
        for content in ours["contents"]:
            for part in content["parts"]:
                for key in ("functionCall", "functionResponse"):
                    assert "id" not in part.get(key, {})


async def replay_tool_cassette(path: str | Path, server: WireServer, *, stream: bool) -> RunResult:
    """Run the recorded tool conversation at ``path`` and check it against the recording.

    The answer, every call's arguments, the usage per round, and every request
    (history up to key order and spelling, signatures on the same parts, no ids).
    """
    cassette = load_cassette(DATA / path)
    recorded = [r.json() for r in cassette.requests]
    tools, declared = recorded_tools(recorded)
    server.add(*replies_for(cassette))

    agent = agent_for(cassette, declared, server.url, stream=stream)
    result = await agent.run(prompt(cassette))

    assert result.stop_reason == "complete"
    assert result.output == gemini_text(cassette.responses[-1])
    assert server.count == len(cassette.interactions)
    assert tools.calls == [(n, a) for n, a, _ in gemini_exchanges(recorded[-1])]
    expected = [_recorded_usage(r) for r in cassette.responses]
    assert [r.usage for r in result.rounds] == expected[:-1]
    assert result.usage == Usage(
        sum(u.input_tokens for u in expected), sum(u.output_tokens for u in expected)
    )
    assert_equivalent(server, recorded, model_of(cassette), stream=stream)
    return result
