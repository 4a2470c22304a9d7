"""Recorded OpenAI Chat Completions traffic replayed over a loopback HTTP server.

For each cassette holding a tool exchange: the agent gets tools with the recorded
names and schemas that return the recorded results, the server replays the
recorded responses one by one, and the run must end with the recorded final
text. Every request nbagent sent must be equivalent to the recorded one (roles,
call ids, arguments, results, tool declarations). Error cassettes must raise the
right ProviderError.
"""

from __future__ import annotations

import pytest

from nbagent.errors import ProviderError
from tests.support.agents import http_agent
from tests.support.cassettes import DATA, load_cassette, replies_for
from tests.support.replay.openai import (
    agent_for,
    normal,
    recorded_results,
    replay_tool_cassette,
)
from tests.support.servers import Reply, WireServer

TOOL_CASSETTES = [
    "llm/openai/test_tool_use_basic.yaml",
    "llm/openai/test_tool_use_chain_of_two_calls.yaml",
    "fantasy/openai/openai-gpt-4o/multi_tool_streaming.yaml",
    "fantasy/openai/openai-gpt-5/tool_streaming.yaml",
    "mirascope/openai/test_call_with_tool_error/openai_gpt_4o_completions.yaml",
]


@pytest.mark.parametrize("name", TOOL_CASSETTES)
async def test_replay_tool_cassette(wire_server: WireServer, name: str) -> None:
    await replay_tool_cassette(name, wire_server)


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
    agent.settings = agent.settings.replace(stream=False)
    plain = await agent.run("What is 1231 * 2331?")
    assert plain.output == streamed.output
    assert [c.to_dict() for c in plain.rounds[0].calls] == [
        c.to_dict() for c in streamed.rounds[0].calls
    ]
    assert normal(wire_server.requests[3].json()["messages"]) == normal(
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
    agent = http_agent("openai:gpt-4o", wire_server, api_key="sk-bad", tools=[], stream=stream)
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
