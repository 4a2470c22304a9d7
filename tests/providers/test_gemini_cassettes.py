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

from nbagent.errors import ProviderError
from tests.support.cassettes import DATA, load_cassette, replies_for
from tests.support.replay.gemini import (
    KEY,
    agent_for,
    assert_equivalent,
    model_of,
    normalize_gemini,
    prompt,
    recorded_tools,
    replay_tool_cassette,
)
from tests.support.servers import Reply

# (cassette, how nbagent is driven). llm-gemini recorded streamGenerateContent WITHOUT
# alt=sse (one JSON array); nbagent streams with alt=sse only, so that recording is
# replayed through generateContent (stream=False), whose decoder accepts the array.
TOOL_CASSETTES = [
    ("pydantic-ai/gemini/test_google_model_iter_stream.yaml", True),
    ("fantasy/gemini/gemini-2.5-flash/multi_tool_streaming.yaml", True),
    ("llm-gemini/gemini/test_tools.yaml", False),
    ("mirascope/gemini/test_call_with_tool_error/google_gemini_2_5_flash.yaml", False),
]


@pytest.mark.parametrize(("name", "stream"), TOOL_CASSETTES)
async def test_replay_tool_cassette(name, stream, wire_server):
    await replay_tool_cassette(name, wire_server, stream=stream)


async def test_replay_gemini3_parallel_calls_and_output_tool(wire_server):
    """pydantic-ai's Gemini 3 recording: 3 parallel calls, 3 single calls, then a call of
    pydantic-ai's own output tool ``final_result`` carrying the answer (the recording has
    no final text). nbagent runs ``final_result`` like any tool, so one scripted reply is
    added after the five recorded ones; the recorded answer is the final_result argument."""
    cassette = load_cassette(
        DATA / "pydantic-ai/gemini/test_google_instructions_only_with_tool_calls.yaml"
    )
    recorded = [r.json() for r in cassette.requests]
    tools, declared = recorded_tools(recorded)
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

    agent = agent_for(cassette, declared, wire_server.url, stream=False)
    result = await agent.run(prompt(cassette))

    assert result.output == "Done."
    assert [len(r.calls) for r in result.rounds] == [3, 1, 1, 1, 1]
    assert tools.calls[-1] == ("final_result", jokes)
    assert wire_server.count == 6
    # The five recorded requests: same history; pydantic-ai forced mode ANY with
    # allowedFunctionNames, nbagent leaves the choice to the model (AUTO).
    assert_equivalent(wire_server, recorded, model_of(cassette), stream=False)
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
    agent = agent_for(cassette, [], wire_server.url, stream=True)
    with pytest.raises(ProviderError) as caught:
        await agent.run(prompt(cassette))
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
    agent = agent_for(cassette, [], wire_server.url, stream=False)
    with pytest.raises(ProviderError) as caught:
        await agent.run(prompt(cassette))
    error = caught.value
    assert (error.status, error.error_type) == (429, "RESOURCE_EXHAUSTED")
    assert error.message.startswith("Resource exhausted. Please try again later.")
    assert "3 retries" in error.message
    assert wire_server.count == 4
    sent = wire_server.bodies()
    assert all(b == sent[0] for b in sent)  # the same request each time
    assert sent[0]["contents"][0]["parts"][0]["text"] == prompt(cassette)
