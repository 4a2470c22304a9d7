"""A scripted Messages API server with fault injection (retries, mid-stream failures).

Each test scripts the exact wire traffic (SSE events with their ``event:`` names, or
JSON bodies), runs a real Agent against it over 127.0.0.1 and asserts what the
server saw (request count, bodies) and what the user gets (answer or ProviderError,
tools run or not, the history left behind).
"""

from __future__ import annotations

import json

import pytest

from nbagent import Agent, Tool
from nbagent.errors import ProviderError
from nbagent.messages import Usage
from nbagent.providers.anthropic import AnthropicProvider
from tests.support.agents import http_agent
from tests.support.servers import Anthropic, Reply

KEY = "test-key-anthropic-wire-5b9e"


class Calls:
    """A real tool that records its calls."""

    def __init__(self) -> None:
        self.seen: list[dict] = []

        def add(a: int, b: int) -> int:
            """Add two numbers."""
            self.seen.append({"a": a, "b": b})
            return a + b

        self.tool = Tool(add)


def make_agent(server, tools=(), *, stream: bool = True, **options) -> Agent:
    return http_agent(
        "anthropic:claude-test", server, tools=list(tools), stream=stream, api_key=KEY,
        backoff=0.01, store=None, **options,
    )  # fmt: skip


def assert_history_valid(agent: Agent) -> None:
    """Every call in the conversation has exactly one result (any provider accepts it)."""
    for message in agent.conversation.messages:
        for tool_round in message.rounds or []:
            assert [r.call_id for r in tool_round.results] == [c.id for c in tool_round.calls]


# --------------------------------------------------------------------------- retries


async def test_429_with_retry_after_is_retried(wire_server):
    wire_server.add(
        Anthropic.error(
            429, "rate_limit_error", "Number of requests exceeded", headers={"retry-after": "0.05"}
        ),
        Anthropic.stream("Hello there."),
    )
    result = await make_agent(wire_server).run("hi")
    assert result.output == "Hello there."
    assert wire_server.count == 2
    assert wire_server.bodies()[0] == wire_server.bodies()[1]


async def test_529_overloaded_is_retried(wire_server):
    wire_server.add(
        Anthropic.error(529, "overloaded_error", "Overloaded"), Anthropic.stream("Fine.")
    )
    result = await make_agent(wire_server).run("hi")
    assert result.output == "Fine."
    assert wire_server.count == 2


async def test_500_then_success_non_streaming(wire_server):
    reply = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": "Recovered."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 5, "output_tokens": 2, "cache_read_input_tokens": 3},
    }
    wire_server.add(Anthropic.error(500, "api_error", "Internal server error"), Reply(200, reply))
    result = await make_agent(wire_server, stream=False).run("hi")
    assert result.output == "Recovered."
    assert result.usage == Usage(8, 2)  # cache reads count as input
    assert wire_server.count == 2
    assert wire_server.bodies()[1]["stream"] is False


async def test_retries_exhausted_reports_the_last_error(wire_server):
    wire_server.add(*[Anthropic.error(529, "overloaded_error", "Overloaded") for _ in range(3)])
    agent = make_agent(wire_server, max_retries=2)
    with pytest.raises(ProviderError) as caught:
        await agent.run("hi")
    assert (caught.value.status, caught.value.error_type) == (529, "overloaded_error")
    assert "Overloaded" in caught.value.message and "2 retries" in caught.value.message
    assert wire_server.count == 3


async def test_slow_first_byte_past_the_timeout_is_retried(wire_server):
    wire_server.add(Anthropic.stream("late", first_byte_delay=1.5), Anthropic.stream("On time."))
    provider = AnthropicProvider(
        "claude-test", base_url=wire_server.url, api_key=KEY, backoff=0.01, timeout=0.3
    )
    agent = Agent(provider, tools=[], store=None)
    result = await agent.run("hi")
    assert result.output == "On time."
    assert wire_server.count == 2


# --------------------------------------------------------------------------- mid-stream failures


async def test_reset_mid_stream_runs_no_tool_and_keeps_history_valid(wire_server):
    # The tool_use block arrives complete (content_block_stop), then the connection is
    # reset before message_delta/message_stop: the call must not run.
    reply = Anthropic.stream("Let me add.", [("toolu_1", "add", '{"a": 2, "b": 3}')])
    reply.chunks = reply.chunks[:-2]  # drop message_delta and message_stop
    reply.drop_after = len(reply.chunks)
    wire_server.add(reply)
    calls = Calls()
    agent = make_agent(wire_server, [calls.tool])
    with pytest.raises(ProviderError) as caught:
        await agent.run("add 2 and 3")
    assert caught.value.error_type == "connection_error"
    assert "mid-stream" in caught.value.message
    assert calls.seen == []
    assert wire_server.count == 1  # never retried once the stream has started
    assert agent.last_result is not None and agent.last_result.rounds == []
    assert_history_valid(agent)


async def test_stream_ending_without_message_stop_is_an_error(wire_server):
    wire_server.add(Anthropic.stream("", [("toolu_1", "add", '{"a": 1, "b": 1}')], end=False))
    calls = Calls()
    agent = make_agent(wire_server, [calls.tool])
    with pytest.raises(ProviderError) as caught:
        await agent.run("add")
    assert caught.value.error_type == "incomplete_stream"
    assert "message_stop" in caught.value.message
    assert calls.seen == []
    assert_history_valid(agent)


async def test_invalid_json_chunk(wire_server):
    reply = Anthropic.stream("Hello")
    reply.chunks.insert(
        3, b'event: content_block_delta\ndata: {"type": "content_block_delta", "ind\n\n'
    )
    wire_server.add(reply)
    agent = make_agent(wire_server)
    with pytest.raises(ProviderError) as caught:
        await agent.run("hi")
    assert caught.value.error_type == "malformed_chunk"
    assert wire_server.count == 1


async def test_error_event_after_200(wire_server):
    error = (
        "error",
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    reply = Anthropic.stream("Partial answer", end=False)
    reply.chunks = reply.chunks[:-1] + Reply.sse([error]).chunks  # error replaces message_delta
    wire_server.add(reply)
    agent = make_agent(wire_server)
    seen_text = []
    with pytest.raises(ProviderError) as caught:
        async for event in agent.stream("hi"):
            if type(event).__name__ == "TextDelta":
                seen_text.append(event.text)
    assert (caught.value.status, caught.value.error_type) == (None, "overloaded_error")
    assert "Overloaded" in caught.value.message
    assert "".join(seen_text) == "Partial answer"  # what the user saw before the error
    assert wire_server.count == 1
    assert_history_valid(agent)


async def test_tool_use_cut_by_max_tokens_is_not_run(wire_server):
    wire_server.add(
        Anthropic.stream("I will add.", [("toolu_1", "add", '{"a": 2, "b"')], stop="max_tokens"),
    )
    calls = Calls()
    result = await make_agent(wire_server, [calls.tool]).run("add")
    assert calls.seen == []
    assert result.output == "I will add."
    assert result.rounds == []


# --------------------------------------------------------------------------- a full exchange


async def test_tool_round_wire_format_and_forced_final_answer(wire_server):
    """Partial text + two calls (one failing), then the forced final answer: the results go
    in ONE user message, is_error marks the failure, the final instruction is a text block
    after them, and tools stay declared with tool_choice none."""
    wire_server.add(
        Anthropic.stream(
            "Adding.",
            [("toolu_a", "add", '{"a": 2, "b": 3}'), ("toolu_b", "add", '{"a": "x", "b": 1}')],
            usage=(20, 9),
        ),
        Anthropic.stream("Five.", usage=(40, 3)),
    )
    calls = Calls()
    agent = make_agent(wire_server, [calls.tool])
    result = await agent.run("add things", max_rounds=1)
    assert result.output == "Five."
    assert result.stop_reason == "max_rounds"
    assert calls.seen == [{"a": 2, "b": 3}]
    assert [r.usage for r in result.rounds] == [Usage(20, 9)]
    assert result.usage == Usage(60, 12)

    first, second = wire_server.bodies()
    assert first["tool_choice"] == {"type": "auto"}
    assert first["max_tokens"] == 4096 and first["stream"] is True
    assert first["tools"] == [
        {
            "name": "add",
            "description": "Add two numbers.",
            "input_schema": calls.tool.parameters,
        }
    ]
    messages = second["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == [
        {"type": "text", "text": "Adding."},
        {"type": "tool_use", "id": "toolu_a", "name": "add", "input": {"a": 2, "b": 3}},
        {"type": "tool_use", "id": "toolu_b", "name": "add", "input": {"a": "x", "b": 1}},
    ]
    results = messages[2]["content"]
    assert results[0] == {"type": "tool_result", "tool_use_id": "toolu_a", "content": "5"}
    assert results[1]["tool_use_id"] == "toolu_b" and results[1]["is_error"] is True
    assert "a" in results[1]["content"]  # the validation error names the bad argument
    assert results[2]["type"] == "text" and "Do not call any more tools" in results[2]["text"]
    assert len(results) == 3
    assert second["tools"] == first["tools"]
    assert second["tool_choice"] == {"type": "none"}


async def test_thinking_blocks_are_echoed_untouched(wire_server):
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}}
    events = [
        Anthropic.event(
            "message_start", message={"usage": {"input_tokens": 9, "output_tokens": 1}}
        ),
        Anthropic.event(
            "content_block_start",
            index=0,
            content_block={"type": "thinking", "thinking": "", "signature": ""},
        ),
        Anthropic.delta(0, "thinking_delta", thinking="Need "),
        Anthropic.delta(0, "thinking_delta", thinking="to add."),
        Anthropic.delta(0, "signature_delta", signature="c2lnbmF0dXJl+/="),
        Anthropic.event("content_block_stop", index=0),
        Anthropic.event(
            "content_block_start",
            index=1,
            content_block={"type": "redacted_thinking", "data": "b3BhcXVl"},
        ),
        Anthropic.event("content_block_stop", index=1),
        Anthropic.event("content_block_start", index=2, content_block=tool_use),
        Anthropic.delta(2, "input_json_delta", partial_json='{"a": 1, "b": 2}'),
        Anthropic.event("content_block_stop", index=2),
        Anthropic.event(
            "message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 30}
        ),
        Anthropic.event("message_stop"),
    ]
    wire_server.add(Reply.sse(events), Anthropic.stream("3"))
    calls = Calls()
    agent = make_agent(
        wire_server,
        [calls.tool],
        extra_body={"thinking": {"type": "enabled", "budget_tokens": 8000}},
    )
    result = await agent.run("1+2?")
    assert result.output == "3"
    second = wire_server.bodies()[1]
    assert second["messages"][1]["content"][:2] == [
        {"type": "thinking", "thinking": "Need to add.", "signature": "c2lnbmF0dXJl+/="},
        {"type": "redacted_thinking", "data": "b3BhcXVl"},
    ]
    assert second["thinking"] == {"type": "enabled", "budget_tokens": 8000}
    assert second["max_tokens"] > 8000  # must exceed the thinking budget
    # The conversation survives a JSON round trip with the opaque blocks intact.
    saved = json.loads(agent.conversation.to_json())
    assert saved["messages"][1]["rounds"][0]["provider_data"]["anthropic_thinking"][0][
        "signature"
    ] == ("c2lnbmF0dXJl+/=")


async def test_tool_names_outside_the_api_pattern_are_mapped_back(wire_server):
    seen = []

    def lookup(city: str) -> str:
        seen.append(city)
        return "sunny"

    tool = Tool(lookup, name="weather.lookup")  # dots are illegal in Anthropic tool names
    wire_server.add(
        Anthropic.stream("", [("toolu_1", "weather_lookup", '{"city": "Paris"}')]),
        Anthropic.stream("Sunny."),
    )
    result = await make_agent(wire_server, [tool]).run("weather?")
    assert result.output == "Sunny."
    assert seen == ["Paris"]
    first, second = wire_server.bodies()
    assert first["tools"][0]["name"] == "weather_lookup"
    assert second["messages"][1]["content"][0]["name"] == "weather_lookup"
    assert result.rounds[0].calls[0].name == "weather.lookup"


async def test_second_run_continues_the_conversation(wire_server):
    wire_server.add(
        Anthropic.stream("", [("toolu_1", "add", '{"a": 1, "b": 1}')]),
        Anthropic.stream("Two."),
        Anthropic.stream("Still two."),
    )
    calls = Calls()
    agent = make_agent(wire_server, [calls.tool], stream=True)
    await agent.run("1+1?")
    result = await agent.run("sure?")
    assert result.output == "Still two."
    third = wire_server.bodies()[2]
    assert [m["role"] for m in third["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert third["messages"][3]["content"] == [{"type": "text", "text": "Two."}]
    assert third["messages"][4]["content"] == [{"type": "text", "text": "sure?"}]


async def test_streaming_and_non_streaming_give_the_same_run(wire_server):
    """The same reply, streamed and not: same rounds, calls, answer and usage."""
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [
            {"type": "text", "text": "Adding."},
            {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 3}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 11, "output_tokens": 7},
    }
    final = {**message, "content": [{"type": "text", "text": "Five."}], "stop_reason": "end_turn"}
    wire_server.add(
        Anthropic.stream("Adding.", [("toolu_1", "add", '{"a": 2, "b": 3}')]),
        Anthropic.stream("Five."),
        Reply(200, message),
        Reply(200, final),
    )
    runs = []
    for stream in (True, False):
        calls = Calls()
        result = await make_agent(wire_server, [calls.tool], stream=stream).run("add")
        runs.append((result.output, result.usage, [r.to_dict() for r in result.rounds], calls.seen))
    for run in runs:  # durations differ; compare everything else
        for tool_round in run[2]:
            tool_round.pop("duration_s")
            for r in tool_round["results"]:
                r.pop("duration_s")
    assert runs[0] == runs[1]
    assert [b["stream"] for b in wire_server.bodies()] == [True, True, False, False]


async def test_auth_token_and_401_hint(wire_server):
    wire_server.add(
        Reply(
            401,
            {"type": "error", "error": {"type": "authentication_error", "message": "bad token"}},
        )
    )
    provider = AnthropicProvider(
        "claude-test", base_url=wire_server.url + "/v1", env={"ANTHROPIC_AUTH_TOKEN": "tok-123"}
    )
    with pytest.raises(ProviderError) as caught:
        await Agent(provider, tools=[], store=None).run("hi")
    assert "bad token" in caught.value.message and "ANTHROPIC_API_KEY" in caught.value.message
    request = wire_server.requests[0]
    assert (
        request.headers["authorization"] == "Bearer tok-123" and "x-api-key" not in request.headers
    )
    assert request.path == "/v1/messages"  # a base URL ending in /v1 is accepted
