"""Replay every Gemini cassette with a tool exchange or an error through a loopback server.

The agent runs with tools of the recorded names that return the recorded results
and must produce the recorded final text; every request nbagent sent must be
equivalent to the recorded one: roles, texts, calls and results in order,
thoughtSignatures echoed on the same parts (compared as bytes: pydantic-ai's SDK
re-encoded them URL-safe), tool declarations up to key order and type spelling.

Call ids: these recordings carry no server-made ``functionCall.id`` (the ids in the
recorded requests were made up by each client), so nbagent must send none either
and pair responses by position, which is what is checked.
"""

from __future__ import annotations

import pytest

from nbagent import Agent
from nbagent.errors import ProviderError
from nbagent.messages import Usage

from .anthropic_gemini_replay import (
    RecordedTools,
    gemini_chunks,
    gemini_exchanges,
    gemini_text,
    normalize_gemini,
)
from .cassettes import DATA, load_cassette
from .wire import Reply, replies_for

KEY = "test-key-gemini-77d2a0"

# (cassette, how nbagent is driven). llm-gemini recorded streamGenerateContent WITHOUT
# alt=sse (one JSON array); nbagent streams with alt=sse only, so that recording is
# replayed through generateContent (stream=False), whose decoder accepts the array.
TOOL_CASSETTES = [
    ("pydantic-ai/gemini/test_google_model_iter_stream.yaml", True),
    ("fantasy/gemini/gemini-2.5-flash/multi_tool_streaming.yaml", True),
    ("llm-gemini/gemini/test_tools.yaml", False),
    ("mirascope/gemini/test_call_with_tool_error/google_gemini_2_5_flash.yaml", False),
]


def _model(cassette) -> str:
    path = cassette.requests[0].path
    return path.split("/models/", 1)[1].split(":", 1)[0]


def _agent(cassette, tools: list, url: str, *, stream: bool, **options) -> Agent:
    first = cassette.requests[0].json()
    system = "".join(
        p.get("text", "") for p in (first.get("systemInstruction") or {}).get("parts", [])
    )
    generation = first.get("generationConfig") or {}
    return Agent(
        "gemini:" + _model(cassette),
        tools=tools,
        system=system or None,
        base_url=url,
        api_key=KEY,
        stream=stream,
        max_output_tokens=generation.get("maxOutputTokens"),
        backoff=0.01,
        store=None,  # no history file: these tests are about the wire
        **options,
    )


def _prompt(cassette) -> str:
    first = cassette.requests[0].json()
    return "".join(p.get("text", "") for p in first["contents"][0]["parts"] if "text" in p)


def _tools(recorded: list[dict]) -> tuple[RecordedTools, list]:
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


def _assert_equivalent(server, recorded: list[dict], model: str, *, stream: bool) -> None:
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


@pytest.mark.parametrize(("name", "stream"), TOOL_CASSETTES)
async def test_replay_tool_cassette(name, stream, wire_server):
    cassette = load_cassette(DATA / name)
    recorded = [r.json() for r in cassette.requests]
    tools, declared = _tools(recorded)
    wire_server.add(*replies_for(cassette))

    agent = _agent(cassette, declared, wire_server.url, stream=stream)
    result = await agent.run(_prompt(cassette))

    assert result.stop_reason == "complete"
    assert result.output == gemini_text(cassette.responses[-1])
    assert wire_server.count == len(cassette.interactions)
    assert tools.calls == [(n, a) for n, a, _ in gemini_exchanges(recorded[-1])]
    expected = [_recorded_usage(r) for r in cassette.responses]
    assert [r.usage for r in result.rounds] == expected[:-1]
    assert result.usage == Usage(
        sum(u.input_tokens for u in expected), sum(u.output_tokens for u in expected)
    )
    _assert_equivalent(wire_server, recorded, _model(cassette), stream=stream)


async def test_replay_gemini3_parallel_calls_and_output_tool(wire_server):
    """pydantic-ai's Gemini 3 recording: 3 parallel calls, 3 single calls, then a call of
    pydantic-ai's own output tool ``final_result`` carrying the answer (the recording has
    no final text). nbagent runs ``final_result`` like any tool, so one scripted reply is
    added after the five recorded ones; the recorded answer is the final_result argument."""
    cassette = load_cassette(
        DATA / "pydantic-ai/gemini/test_google_instructions_only_with_tool_calls.yaml"
    )
    recorded = [r.json() for r in cassette.requests]
    tools, declared = _tools(recorded)
    jokes = cassette.responses[-1].json()["candidates"][0]["content"]["parts"][0]["functionCall"][
        "args"
    ]
    tools.add_result("final_result", jokes, "ok")
    done = {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "Done."}]}, "finishReason": "STOP"}
        ]
    }
    wire_server.add(*replies_for(cassette), Reply(200, done))

    agent = _agent(cassette, declared, wire_server.url, stream=False)
    result = await agent.run(_prompt(cassette))

    assert result.output == "Done."
    assert [len(r.calls) for r in result.rounds] == [3, 1, 1, 1, 1]
    assert tools.calls[-1] == ("final_result", jokes)
    assert wire_server.count == 6
    # The five recorded requests: same history; pydantic-ai forced mode ANY with
    # allowedFunctionNames, nbagent leaves the choice to the model (AUTO).
    _assert_equivalent(wire_server, recorded, _model(cassette), stream=False)
    for ours in wire_server.bodies():
        assert ours["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}
    # The 6th request answers final_result, and every signature went back on its first call part.
    last = wire_server.bodies()[-1]["contents"]
    assert last[-1]["parts"] == [
        {"functionResponse": {"name": "final_result", "response": {"output": "ok"}}}
    ]
    signed = [
        p for c in last if c["role"] == "model" for p in c["parts"] if "thoughtSignature" in p
    ]
    assert len(signed) == 5


async def test_replay_invalid_key_on_sse_endpoint(wire_server):
    """API_KEY_INVALID: HTTP 400 on the SSE endpoint with a plain JSON body (text/event-stream)."""
    cassette = load_cassette(
        DATA / "mirascope/gemini/test_authentication_error_stream/google_gemini_2_5_flash.yaml"
    )
    wire_server.add(*replies_for(cassette))
    agent = _agent(cassette, [], wire_server.url, stream=True)
    with pytest.raises(ProviderError) as caught:
        await agent.run(_prompt(cassette))
    error = caught.value
    assert (error.provider, error.status, error.error_type) == ("gemini", 400, "INVALID_ARGUMENT")
    assert error.message.startswith("API key not valid. Please pass a valid API key.")
    assert "GEMINI_API_KEY" in error.message  # says what to set
    assert KEY not in str(error) and KEY not in repr(error)
    assert wire_server.count == 1
    assert normalize_gemini(wire_server.bodies()[0]) == normalize_gemini(
        cassette.requests[0].json()
    )


async def test_replay_resource_exhausted_is_retried_then_reported(wire_server):
    """crewAI's 429 RESOURCE_EXHAUSTED (no quota detail, no retryDelay): retried with backoff
    (3 retries by default), then reported with Gemini's message. The recorded request
    carried an inline video, which nbagent does not send; only the text is compared."""
    cassette = load_cassette(
        DATA
        / "crewAI/gemini/TestAgentMultimodalGemini.test_video_file[gemini-gemini-2.0-flash].yaml"
    )
    wire_server.add(*(replies_for(cassette) * 4))
    agent = _agent(cassette, [], wire_server.url, stream=False)
    with pytest.raises(ProviderError) as caught:
        await agent.run(_prompt(cassette))
    error = caught.value
    assert (error.status, error.error_type) == (429, "RESOURCE_EXHAUSTED")
    assert error.message.startswith("Resource exhausted. Please try again later.")
    assert "3 retries" in error.message
    assert wire_server.count == 4
    sent = wire_server.bodies()
    assert all(b == sent[0] for b in sent)  # the same request each time
    assert sent[0]["contents"][0]["parts"][0]["text"] == _prompt(cassette)
