"""Replay every Anthropic cassette with a tool exchange or an error through a loopback server.

The agent runs with tools of the recorded names that return the recorded results;
it must produce the recorded final text, and every request nbagent sent must be
equivalent to the recorded one (roles, texts, call ids, calls, results, thinking
blocks with signatures, tool declarations up to key order).
"""

from __future__ import annotations

import json

import pytest

from nbagent import Agent
from nbagent.errors import ProviderError
from nbagent.messages import Usage

from .anthropic_gemini_replay import (
    RecordedTools,
    anthropic_blocks,
    anthropic_exchanges,
    anthropic_text,
    normalize_anthropic,
)
from .cassettes import DATA, load_cassette
from .wire import replies_for

TOOL_CASSETTES = [
    "llm-anthropic/anthropic/test_tools.yaml",
    "llm-anthropic/anthropic/test_fixed_version_tool_chain_with_thinking_display_regression.yaml",
    "mirascope/anthropic/test_call_with_tools/anthropic_claude_sonnet_4_0/stream.yaml",
    "fantasy/anthropic/claude-sonnet-4/multi_tool_streaming.yaml",
    "pydantic-ai/anthropic/test_multiple_parallel_tool_calls.yaml",
    "mirascope/anthropic/test_call_with_tool_error/anthropic_claude_sonnet_4_0.yaml",
]

KEY = "test-key-anthropic-3c1f9e"


def _agent_for(first: dict, tools: list, url: str) -> Agent:
    system = first.get("system")
    if isinstance(system, list):
        system = "".join(b.get("text", "") for b in system)
    extra = {k: first[k] for k in ("thinking", "output_config") if k in first}
    return Agent(
        "anthropic:" + first["model"],
        tools=tools,
        system=system or None,
        base_url=url,
        api_key=KEY,
        stream=bool(first.get("stream")),
        max_output_tokens=first["max_tokens"],
        extra_body=extra,
        backoff=0.01,
        store=None,  # no history file: these tests are about the wire
    )


def _recorded_usage(response) -> Usage:
    """Input (incl. cache) and output tokens; streamed counts are cumulative (last wins)."""
    if not response.is_stream:
        usages = [response.json()["usage"]]
    else:
        usages = []
        for line in response.text.splitlines():
            if line.startswith("data:"):
                data = json.loads(line[5:])
                usages.append((data.get("message") or {}).get("usage") or data.get("usage") or {})
    counts: dict = {}
    for usage in usages:
        counts.update({k: v for k, v in usage.items() if isinstance(v, int)})
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return Usage(sum(counts.get(k, 0) for k in keys), counts.get("output_tokens", 0))


def _prompt(first: dict) -> str:
    return "".join(b.get("text", "") for b in anthropic_blocks(first["messages"][0]["content"]))


@pytest.mark.parametrize("name", TOOL_CASSETTES)
async def test_replay_tool_cassette(name, wire_server):
    cassette = load_cassette(DATA / name)
    recorded = [r.json() for r in cassette.requests]
    first = recorded[0]
    tools = RecordedTools()
    for tool_name, arguments, result in anthropic_exchanges(recorded[-1]):
        tools.add_result(tool_name, arguments, result)
    declared = [
        tools.make_tool(t["name"], t.get("description"), t["input_schema"]) for t in first["tools"]
    ]
    wire_server.add(*replies_for(cassette))

    agent = _agent_for(first, declared, wire_server.url)
    result = await agent.run(_prompt(first))

    assert result.stop_reason == "complete"
    assert result.output == anthropic_text(cassette.responses[-1])
    assert wire_server.count == len(cassette.interactions)
    # Every recorded call was executed with the recorded arguments.
    assert tools.calls == [(n, a) for n, a, _ in anthropic_exchanges(recorded[-1])]
    # Usage per round and in total, as the recorded responses report it.
    expected = [_recorded_usage(r) for r in cassette.responses]
    assert [r.usage for r in result.rounds] == expected[:-1]
    assert result.usage == Usage(
        sum(u.input_tokens for u in expected), sum(u.output_tokens for u in expected)
    )
    for ours, theirs, request in zip(
        wire_server.bodies(), recorded, wire_server.requests, strict=True
    ):
        assert normalize_anthropic(ours) == normalize_anthropic(theirs)
        assert ours["model"] == theirs["model"]
        assert ours["stream"] == bool(theirs.get("stream"))
        assert request.path == "/v1/messages"
        assert request.headers["x-api-key"] == KEY
        assert request.headers["anthropic-version"] == "2023-06-01"
        assert KEY not in request.url


async def test_replay_authentication_error(wire_server):
    """401 on a stream request (plain JSON body): no retry, the provider's message, what to set."""
    cassette = load_cassette(
        DATA
        / "mirascope/anthropic/test_authentication_error_stream/anthropic_claude_sonnet_4_0.yaml"
    )
    first = cassette.requests[0].json()
    wire_server.add(*replies_for(cassette))
    agent = _agent_for(first, [], wire_server.url)
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
    agent = _agent_for(first, [], wire_server.url)
    with pytest.raises(ProviderError) as caught:
        await agent.run(_prompt(first))
    error = caught.value
    assert (error.status, error.error_type) == (400, "invalid_request_error")
    recorded_message = cassette.responses[0].json()["error"]["message"]
    assert recorded_message.startswith("This model does not support effort level 'xhigh'")
    assert error.message == recorded_message
    assert wire_server.count == 1
    ours = wire_server.bodies()[0]
    assert ours["output_config"] == {"effort": "xhigh"} and ours["stream"] is False
    assert normalize_anthropic(ours) == normalize_anthropic(first)
