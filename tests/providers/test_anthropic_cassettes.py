"""Replay every Anthropic cassette with a tool exchange or an error through a loopback server.

The agent runs with tools of the recorded names that return the recorded results;
it must produce the recorded final text, and every request nbagent sent must be
equivalent to the recorded one (roles, texts, call ids, calls, results, thinking
blocks with signatures, tool declarations up to key order).
"""

from __future__ import annotations

import pytest

from nbagent.errors import ProviderError
from tests.support.cassettes import DATA, load_cassette, replies_for
from tests.support.replay.anthropic import (
    KEY,
    agent_for,
    normalize_anthropic,
    prompt,
    replay_tool_cassette,
)

TOOL_CASSETTES = [
    "llm-anthropic/anthropic/test_tools.yaml",
    "llm-anthropic/anthropic/test_fixed_version_tool_chain_with_thinking_display_regression.yaml",
    "mirascope/anthropic/test_call_with_tools/anthropic_claude_sonnet_4_0/stream.yaml",
    "fantasy/anthropic/claude-sonnet-4/multi_tool_streaming.yaml",
    "pydantic-ai/anthropic/test_multiple_parallel_tool_calls.yaml",
    "mirascope/anthropic/test_call_with_tool_error/anthropic_claude_sonnet_4_0.yaml",
]


@pytest.mark.parametrize("name", TOOL_CASSETTES)
async def test_replay_tool_cassette(name, wire_server):
    await replay_tool_cassette(name, wire_server)


async def test_replay_authentication_error(wire_server):
    """401 on a stream request (plain JSON body): no retry, the provider's message, what to set."""
    cassette = load_cassette(
        DATA
        / "mirascope/anthropic/test_authentication_error_stream/anthropic_claude_sonnet_4_0.yaml"
    )
    first = cassette.requests[0].json()
    wire_server.add(*replies_for(cassette))
    agent = agent_for(first, [], wire_server.url)
    with pytest.raises(ProviderError) as caught:
        await agent.run(first["messages"][0]["content"])
    error = caught.value
    assert (error.provider, error.status, error.error_type) == (
        "anthropic",
        401,
        "authentication_error",
    )
    assert "invalid x-api-key" in error.message
    assert "ANTHROPIC_API_KEY" in str(error) and "api_key=" in str(error)
    assert KEY not in str(error) and KEY not in repr(error)
    assert wire_server.count == 1  # x-should-retry: false, and 401 is never retried
    assert wire_server.bodies()[0]["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": first["messages"][0]["content"]}]}
    ]
    # The history stays valid: the failed run left an assistant turn without rounds.
    assert agent.conversation.messages[-1].rounds == []


async def test_replay_invalid_request_error(wire_server):
    """400 invalid_request_error (pydantic-ai, effort=xhigh): not retried, message kept."""
    cassette = load_cassette(
        DATA
        / "pydantic-ai/anthropic/test_anthropic_explicit_effort_xhigh_unsupported_model_errors.yaml"
    )
    first = cassette.requests[0].json()
    wire_server.add(*replies_for(cassette))
    agent = agent_for(first, [], wire_server.url)
    with pytest.raises(ProviderError) as caught:
        await agent.run(prompt(first))
    error = caught.value
    assert (error.status, error.error_type) == (400, "invalid_request_error")
    recorded_message = cassette.responses[0].json()["error"]["message"]
    assert recorded_message.startswith("This model does not support effort level 'xhigh'")
    assert error.message == recorded_message
    assert wire_server.count == 1
    ours = wire_server.bodies()[0]
    assert ours["output_config"] == {"effort": "xhigh"} and ours["stream"] is False
    assert normalize_anthropic(ours) == normalize_anthropic(first)
