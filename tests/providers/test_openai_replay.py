"""Recorded OpenAI Chat Completions traffic replayed over a loopback HTTP server.

For each cassette holding a tool exchange: the agent gets tools with the recorded
names and schemas that return the recorded results, the server replays the
recorded responses one by one, and the run must end with the recorded final
text. Every request nbagent sent must be equivalent to the recorded one (roles,
call ids, arguments, results, tool declarations). Error cassettes must raise the
right ProviderError.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from nbagent import Agent
from nbagent.errors import ProviderError

from .cassettes import DATA, Cassette, RecordedResults, load_cassette, recorded_tool
from .wire import WireServer, replies_for

TOOL_CASSETTES = [
    "llm/openai/test_tool_use_basic.yaml",
    "llm/openai/test_tool_use_chain_of_two_calls.yaml",
    "fantasy/openai/openai-gpt-4o/multi_tool_streaming.yaml",
    "fantasy/openai/openai-gpt-5/tool_streaming.yaml",
    "mirascope/openai/test_call_with_tool_error/openai_gpt_4o_completions.yaml",
]


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
    return Agent(
        f"openai:{first['model']}",
        base_url=server.url + "/v1",
        api_key="sk-replay-key",
        tools=tools,
        system=system,
        stream=bool(first.get("stream")),
    )


def _normal(messages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
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


def _declarations(body: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for t in body.get("tools", []):
        f = t["function"]
        params = f.get("parameters") or {}
        props = {k: v.get("type") for k, v in (params.get("properties") or {}).items()}
        out[f["name"]] = (f.get("description"), props, sorted(params.get("required") or []))
    return out


@pytest.mark.parametrize("name", TOOL_CASSETTES)
async def test_replay_tool_cassette(wire_server: WireServer, name: str) -> None:
    cassette = load_cassette(DATA / name)
    wire_server.add(*replies_for(cassette))
    results = recorded_results(cassette)
    agent = agent_for(cassette, wire_server, results)
    first_prompt = next(
        _text(m["content"]) for m in cassette.requests[0].json()["messages"] if m["role"] == "user"
    )

    result = await agent.run(first_prompt)

    assert result.output == final_text(cassette)
    assert result.stop_reason == "complete"
    assert wire_server.count == len(cassette.requests)
    assert len(result.rounds) == len(cassette.requests) - 1
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0
    for sent, recorded in zip(wire_server.requests, cassette.requests, strict=True):
        assert sent.path == "/v1/chat/completions"
        assert sent.headers["authorization"] == "Bearer sk-replay-key"
        ours, theirs = sent.json(), recorded.json()
        assert _normal(ours["messages"]) == _normal(theirs["messages"])
        assert _declarations(ours) == _declarations(theirs)
        assert ours["model"] == theirs["model"]
        assert bool(ours.get("stream")) == bool(theirs.get("stream"))
        if ours.get("stream"):
            assert ours["stream_options"] == {"include_usage": True}


async def test_replay_parallel_calls_keep_order_and_ids(wire_server: WireServer) -> None:
    """gpt-4o streams add and multiply at index 0 and 1: two calls, ids kept, in order."""
    cassette = load_cassette(DATA / "fantasy/openai/openai-gpt-4o/multi_tool_streaming.yaml")
    wire_server.add(*replies_for(cassette, chunk_size=7))  # tiny chunks: splits everywhere
    results = recorded_results(cassette)
    agent = agent_for(cassette, wire_server, results)
    result = await agent.run("Add and multiply the number 2 and 3")
    (tool_round,) = result.rounds
    assert [(c.id, c.name, c.arguments) for c in tool_round.calls] == [
        ("call_ehIWdjL1abZk1h8FWGLQ0Hie", "add", {"a": 2, "b": 3}),
        ("call_fBSgA47J5VeONggizTIvl7AH", "multiply", {"a": 2, "b": 3}),
    ]
    assert [r.content for r in tool_round.results] == ["5", "6"]
    assert result.output == "The sum of 2 and 3 is 5, and the product is 6."


async def test_replay_stream_and_non_stream_same_events(wire_server: WireServer) -> None:
    """A recorded stream and the same reply as one JSON body give the same run."""
    cassette = load_cassette(DATA / "llm/openai/test_tool_use_basic.yaml")
    wire_server.add(*replies_for(cassette))
    results = recorded_results(cassette)
    streamed = await agent_for(cassette, wire_server, results).run("What is 1231 * 2331?")

    # The same two replies, rebuilt as non-streaming chat.completion bodies.
    from .wire import Reply

    call = streamed.rounds[0].calls[0]
    wire_server.add(
        Reply(
            200,
            {
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "tool_calls",
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": call.id,
                                    "type": "function",
                                    "function": {
                                        "name": "multiply",
                                        "arguments": call.raw_arguments,
                                    },
                                }
                            ],
                        },
                    }
                ],
                "usage": {"prompt_tokens": 57, "completion_tokens": 19},
            },
        ),
        Reply(
            200,
            {
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": streamed.output},
                    }
                ],
                "usage": {"prompt_tokens": 88, "completion_tokens": 12},
            },
        ),
    )
    results = recorded_results(cassette)
    agent = agent_for(cassette, wire_server, results)
    agent.settings.stream = False
    plain = await agent.run("What is 1231 * 2331?")
    assert plain.output == streamed.output
    assert [c.to_dict() for c in plain.rounds[0].calls] == [
        c.to_dict() for c in streamed.rounds[0].calls
    ]
    assert _normal(wire_server.requests[3].json()["messages"]) == _normal(
        wire_server.requests[1].json()["messages"]
    )
    assert "stream" not in wire_server.requests[2].json()


@pytest.mark.parametrize(
    ("name", "status", "error_type", "text", "stream"),
    [
        (
            "mirascope/openai/strict-tool/openai_completions/"
            "handles-optional-properties-in-strict-mode.har",
            400,
            "invalid_request_error/invalid_function_parameters",
            "Invalid schema for function",
            False,
        ),
        (
            "mirascope/openai/test_authentication_error_stream/openai_gpt_4o_completions.yaml",
            401,
            "invalid_request_error/invalid_api_key",
            "Incorrect API key provided",
            True,
        ),
    ],
)
async def test_replay_error_cassette(
    wire_server: WireServer, name: str, status: int, error_type: str, text: str, stream: bool
) -> None:
    cassette = load_cassette(DATA / name)
    wire_server.add(*replies_for(cassette))
    agent = Agent(
        "openai:gpt-4o", base_url=wire_server.url + "/v1", api_key="sk-bad", tools=[], stream=stream
    )
    with pytest.raises(ProviderError) as info:
        await agent.run("hello")
    err = info.value
    assert (err.provider, err.status, err.error_type) == ("openai", status, error_type)
    assert text in err.message
    assert wire_server.count == 1  # 400 and 401 are never retried
    if status == 401:
        assert "OPENAI_API_KEY" in str(err)
    assert "sk-bad" not in str(err)
    # The history stays valid: the failed run left a user turn and an assistant turn.
    assert [m.role for m in agent.conversation.messages] == ["user", "assistant"]
