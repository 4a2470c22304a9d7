"""OpenAI adapter against a scripted Chat Completions server: wire format and faults."""

from __future__ import annotations

import json
import logging
import traceback
from typing import Any

import pytest

from nbagent import Agent
from nbagent.errors import ConfigError, ProviderError
from nbagent.providers.openai import OpenAIProvider
from nbagent.tools import Tool
from tests.support.agents import http_agent
from tests.support.servers import OpenAI, Reply, WireServer

KEY = "sk-LEAKCHECK-0123456789abcdef"


class Calls:
    """A tool that records what it was called with."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

        def add(a: int, b: int) -> int:
            """Add two numbers."""
            self.seen.append({"a": a, "b": b})
            return a + b

        self.tool = Tool(add)


def agent_for(server: WireServer, tools: list[Tool], **options: Any) -> Agent:
    return http_agent("openai:gpt-test", server, tools=tools, api_key=KEY, **options)


# --------------------------------------------------------------------------- wire format


@pytest.mark.parametrize("stream", [True, False])
async def test_round_trip_and_history_expansion(wire_server: WireServer, stream: bool) -> None:
    calls = Calls()
    if stream:
        wire_server.add(
            OpenAI.call_stream(("call_A", "add", '{"a": 2, "b": 3}')),
            OpenAI.text_stream("It is 5."),
        )
        wire_server.add(OpenAI.text_stream("Bye."))
    else:
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
                                "content": "Let me add.",
                                "tool_calls": [
                                    {
                                        "id": "call_A",
                                        "type": "function",
                                        "function": {
                                            "name": "add",
                                            "arguments": '{"a": 2, "b": 3}',
                                        },
                                    }
                                ],
                            },
                        }
                    ],
                    "usage": {"prompt_tokens": 11, "completion_tokens": 7},
                },
            ),
            OpenAI.text_reply("It is 5."),
            OpenAI.text_reply("Bye."),
        )
    agent = agent_for(
        wire_server,
        [calls.tool],
        system="Be terse.",
        stream=stream,
        max_output_tokens=50,
        temperature=0.2,
    )
    result = await agent.run("What is 2 + 3?")
    assert result.output == "It is 5."
    assert calls.seen == [{"a": 2, "b": 3}]
    assert result.usage.input_tokens > 0
    await agent.run("Thanks")

    first, second, third = wire_server.bodies()
    assert first["model"] == "gpt-test"
    assert first["messages"] == [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "What is 2 + 3?"},
    ]
    assert first["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add two numbers.",
                "parameters": calls.tool.parameters,
            },
        }
    ]
    assert first["tool_choice"] == "auto"
    assert first["max_tokens"] == 50 and "max_completion_tokens" not in first  # not api.openai.com
    assert first["temperature"] == 0.2
    if stream:
        assert first["stream"] is True and first["stream_options"] == {"include_usage": True}
    else:
        assert "stream" not in first and "stream_options" not in first
    assistant = second["messages"][2]
    assert assistant["role"] == "assistant"
    assert assistant["content"] == ("" if stream else "Let me add.")
    assert assistant["tool_calls"] == [
        {
            "id": "call_A",
            "type": "function",
            "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
        }
    ]
    assert second["messages"][3] == {"role": "tool", "tool_call_id": "call_A", "content": "5"}
    assert third["messages"][2:] == [
        assistant,
        {"role": "tool", "tool_call_id": "call_A", "content": "5"},
        {"role": "assistant", "content": "It is 5."},
        {"role": "user", "content": "Thanks"},
    ]
    request = wire_server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"


async def test_forced_final_answer_keeps_tools_and_says_none(wire_server: WireServer) -> None:
    calls = Calls()
    wire_server.add(
        OpenAI.call_stream(("call_1", "add", '{"a":1,"b":1}')), OpenAI.text_stream("Two.")
    )
    agent = agent_for(wire_server, [calls.tool], max_rounds=1)
    result = await agent.run("1+1?")
    assert result.stop_reason == "max_rounds"
    final = wire_server.bodies()[1]
    assert final["tool_choice"] == "none"
    assert [t["function"]["name"] for t in final["tools"]] == ["add"]
    roles = [m["role"] for m in final["messages"]]
    assert roles == ["user", "assistant", "tool", "user"]  # instruction after the results
    assert final["messages"][-1]["content"]


async def test_parallel_calls_and_new_id_at_used_index(wire_server: WireServer) -> None:
    """Some servers reuse index 0 for parallel calls: a new id starts a new call."""
    calls = Calls()
    events = [
        OpenAI.chunk(OpenAI.tool_delta(0, id="call_X", name="add", args='{"a": 1, "b": 2}')),
        OpenAI.chunk(OpenAI.tool_delta(0, id="call_Y", name="add", args='{"a": 3,')),
        OpenAI.chunk(OpenAI.tool_delta(0, args=' "b": 4}')),
        OpenAI.chunk(finish="stop"),  # a plain "stop": calls are detected from content
        "[DONE]",
    ]
    wire_server.add(Reply.sse(events), OpenAI.text_stream("3 and 7"))
    result = await agent_for(wire_server, [calls.tool]).run("two sums")
    assert [(c.id, c.arguments) for c in result.rounds[0].calls] == [
        ("call_X", {"a": 1, "b": 2}),
        ("call_Y", {"a": 3, "b": 4}),
    ]
    tool_messages = [m for m in wire_server.bodies()[1]["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tool_messages] == [
        ("call_X", "3"),
        ("call_Y", "7"),
    ]
    # The usage chunk with empty choices was read; the first reply had none: estimated.
    assert result.usage.input_tokens == result.rounds[0].usage.input_tokens + 11
    assert "tokens estimated: the server reported no usage" in result.notes


async def test_invalid_json_arguments_are_sent_back_as_an_error(wire_server: WireServer) -> None:
    calls = Calls()
    wire_server.add(
        OpenAI.call_stream(("call_bad", "add", '{"a": 1, "b": ')), OpenAI.text_stream("Sorry.")
    )
    result = await agent_for(wire_server, [calls.tool]).run("1+?")
    (call,) = result.rounds[0].calls
    assert call.raw_arguments == '{"a": 1, "b": '
    assert calls.seen == []  # never run with half arguments
    assert not result.rounds[0].results[0].ok
    second = wire_server.bodies()[1]["messages"]
    assert second[1]["tool_calls"][0]["function"]["arguments"] == '{"a": 1, "b": '  # byte for byte
    assert second[2]["role"] == "tool" and "rror" in second[2]["content"]


async def test_missing_id_is_generated_and_empty_arguments_are_empty_object(
    wire_server: WireServer,
) -> None:
    def now() -> str:
        """The time."""
        return "noon"

    events = [
        OpenAI.chunk(
            {
                "tool_calls": [
                    {"index": 0, "type": "function", "function": {"name": "now", "arguments": ""}}
                ]
            }
        ),
        OpenAI.chunk(finish="tool_calls"),
        "[DONE]",
    ]
    wire_server.add(Reply.sse(events), OpenAI.text_stream("Noon."))
    result = await agent_for(wire_server, [Tool(now)]).run("time?")
    (call,) = result.rounds[0].calls
    assert call.id and call.arguments == {}
    assert wire_server.bodies()[1]["messages"][2]["tool_call_id"] == call.id


async def test_streamed_rounds_reuse_one_connection(wire_server: WireServer) -> None:
    calls = Calls()
    wire_server.add(
        OpenAI.call_stream(("call_1", "add", '{"a":1,"b":1}')), OpenAI.text_stream("Two.")
    )
    result = await agent_for(wire_server, [calls.tool]).run("1+1?")
    assert result.output == "Two."
    assert wire_server.count == 2 and wire_server.connections == 1


# --------------------------------------------------------------------------- faults


@pytest.mark.parametrize(
    ("first", "headers"),
    [(429, {"retry-after": "0"}), (529, {}), (500, {}), (503, {"retry-after-ms": "20"})],
)
async def test_retry_then_success(wire_server: WireServer, first: int, headers: dict) -> None:
    wire_server.add(Reply(first, {"error": {"message": "try later", "type": "x"}}, headers=headers))
    wire_server.add(OpenAI.text_stream("Fine."))
    result = await agent_for(wire_server, []).run("hi")
    assert result.output == "Fine."
    assert wire_server.count == 2
    assert wire_server.bodies()[0] == wire_server.bodies()[1]  # the same request again


async def test_reset_mid_stream_runs_no_tool(wire_server: WireServer) -> None:
    calls = Calls()
    reply = OpenAI.call_stream(("call_1", "add", '{"a": 1, "b": 2}'))
    reply.drop_after = 3  # the connection dies inside the arguments
    wire_server.add(reply)
    agent = agent_for(wire_server, [calls.tool])
    with pytest.raises(ProviderError) as info:
        await agent.run("1+2")
    assert info.value.error_type == "connection_error"
    assert "mid-stream" in info.value.message
    assert wire_server.count == 1  # never retried after the first byte
    assert calls.seen == []
    assistant = agent.conversation.messages[-1]
    assert assistant.role == "assistant" and not assistant.rounds


async def test_slow_first_byte_past_timeout(wire_server: WireServer) -> None:
    wire_server.add(*[Reply(200, {"choices": []}, first_byte_delay=1.0)] * 2)
    provider = OpenAIProvider(
        "gpt-test", base_url=wire_server.url + "/v1", api_key=KEY, env={}, timeout=0.2,
        max_retries=1,
    )  # fmt: skip
    agent = Agent(provider, tools=[])
    with pytest.raises(ProviderError) as info:
        await agent.run("hi")
    assert info.value.error_type == "timeout"
    assert "no response within the timeout" in info.value.message
    assert wire_server.count == 2  # one retry, then the clear error


async def test_invalid_json_chunk(wire_server: WireServer) -> None:
    calls = Calls()
    events = [
        OpenAI.chunk(OpenAI.tool_delta(0, id="call_1", name="add", args='{"a": 1')),
        '{"choices": [ broken',
    ]
    wire_server.add(Reply.sse(events + ["[DONE]"]))
    with pytest.raises(ProviderError) as info:
        await agent_for(wire_server, [calls.tool]).run("hi")
    assert info.value.error_type == "malformed_chunk"
    assert calls.seen == []


async def test_stream_without_terminator(wire_server: WireServer) -> None:
    calls = Calls()
    reply = OpenAI.call_stream(("call_1", "add", '{"a": 1, "b": 2}'))
    assert reply.chunks is not None
    reply.chunks = reply.chunks[:-1]  # no "data: [DONE]", the HTTP body ends cleanly
    wire_server.add(reply)
    agent = agent_for(wire_server, [calls.tool])
    with pytest.raises(ProviderError) as info:
        await agent.run("hi")
    assert info.value.error_type == "incomplete_stream"
    assert "[DONE]" in info.value.message
    assert calls.seen == []
    assert agent.conversation.messages[-1].rounds == []


async def test_error_event_after_200(wire_server: WireServer) -> None:
    events = [
        OpenAI.chunk({"content": "Hel"}),
        {"error": {"message": "The server had an error", "type": "server_error"}},
    ]
    wire_server.add(Reply.sse(events))
    with pytest.raises(ProviderError) as info:
        await agent_for(wire_server, []).run("hi")
    assert "The server had an error" in info.value.message
    assert info.value.error_type == "server_error"


# --------------------------------------------------------------------------- config and secrets


def test_key_required_for_openai_only() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIProvider("gpt-4o-mini", env={})
    OpenAIProvider("local-model", base_url="http://127.0.0.1:8080/v1", env={})  # no key needed


async def test_env_base_url_and_no_auth_header_without_key(wire_server: WireServer) -> None:
    wire_server.add(OpenAI.text_reply("ok"))
    provider = OpenAIProvider("m", env={"OPENAI_BASE_URL": wire_server.url + "/v1/"})
    result = await Agent(provider, tools=[], stream=False).run("hi")
    assert result.output == "ok"
    assert "authorization" not in wire_server.requests[0].headers
    assert wire_server.requests[0].path == "/v1/chat/completions"


async def test_extra_body_and_tool_choice_options(wire_server: WireServer) -> None:
    calls = Calls()
    wire_server.add(
        OpenAI.call_stream(("call_1", "add", '{"a":1,"b":1}')), OpenAI.text_stream("Two.")
    )
    provider = OpenAIProvider(
        "local", base_url=wire_server.url, env={}, tool_choice="required",
        extra_body={"parallel_tool_calls": True},
    )  # fmt: skip
    result = await Agent(provider, tools=[calls.tool], max_rounds=1).run("1+1")
    assert result.output == "Two."
    first, final = wire_server.bodies()
    assert first["tool_choice"] == "required" and first["parallel_tool_calls"] is True
    assert final["tool_choice"] == "none"  # the forced final answer always says none


def test_official_api_gets_max_completion_tokens() -> None:
    from nbagent.messages import Message
    from nbagent.providers import ModelRequest

    provider = OpenAIProvider("gpt-4o", env={"OPENAI_API_KEY": KEY})
    body = provider.build_body(
        ModelRequest(system=None, messages=[Message("user", "x")], max_output_tokens=9)
    )
    assert body["max_completion_tokens"] == 9 and "max_tokens" not in body
    assert KEY not in repr(provider)


async def test_key_never_leaks(wire_server: WireServer, caplog: pytest.LogCaptureFixture) -> None:
    """Errors echoing the key, retries, a dead server: the key is in no text anywhere."""
    caplog.set_level(logging.DEBUG)
    texts: list[str] = []
    echo = {
        "error": {
            "message": f"Incorrect API key provided: {KEY}",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    }
    wire_server.add(Reply(401, echo))
    wire_server.add(Reply(500, {"error": {"message": f"boom {KEY}"}}, headers={"retry-after": "0"}))
    wire_server.add(Reply(500, {"error": {"message": f"boom {KEY}"}}, headers={"retry-after": "0"}))
    wire_server.add(
        Reply.sse([OpenAI.chunk({"content": "x"}), {"error": {"message": f"late {KEY}"}}])
    )
    agent = agent_for(wire_server, [], max_retries=1)
    for _ in range(3):
        with pytest.raises(ProviderError) as info:
            await agent.run("hi")
        texts += [str(info.value), repr(info.value), info.value.message, str(info.value.error_type)]
        texts += ["".join(traceback.format_exception(info.value))]  # with chained causes
    assert "OPENAI_API_KEY" in texts[0]  # the 401 says what to set
    dead = WireServer()
    url = dead.url
    dead.close()
    provider = OpenAIProvider("m", base_url=f"{url}/v1", api_key=KEY, max_retries=0, env={})
    with pytest.raises(ProviderError) as info:
        await Agent(provider, tools=[]).run("hi")
    texts += [str(info.value), repr(provider), repr(agent), repr(agent.provider)]
    texts += [agent.conversation.to_json(), repr(agent.last_result)]
    texts += [r.url for r in wire_server.requests]
    texts += [record.getMessage() for record in caplog.records]
    texts += [caplog.text]
    assert all(KEY not in t for t in texts), [t for t in texts if KEY in t]
    # ... while it really was sent, in the header only.
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in wire_server.requests)
    assert all(KEY.encode() not in r.body for r in wire_server.requests)
    await provider.aclose()


async def test_same_provider_from_background_loop_and_this_loop(wire_server: WireServer) -> None:
    """run_sync uses nbagent's background loop thread; run uses this loop. One provider
    serves both (a client per event loop: an httpx client must not cross loops)."""
    wire_server.add(
        OpenAI.text_stream("one"), OpenAI.text_stream("two"), OpenAI.text_stream("three")
    )
    agent = agent_for(wire_server, [])
    assert agent.run_sync("first").output == "one"  # background loop thread
    assert (await agent.run("second")).output == "two"  # the test's loop
    assert agent.run_sync("third").output == "three"
    assert [m["content"] for m in wire_server.bodies()[2]["messages"]] == [
        "first",
        "one",
        "second",
        "two",
        "third",
    ]


async def test_event_stream_matches_between_modes(wire_server: WireServer) -> None:
    """stream=True and stream=False produce the same provider events."""
    from nbagent.messages import Message
    from nbagent.providers import ModelRequest

    calls = [("call_Q", "add", '{"a": 5, "b": 6}')]
    wire_server.add(OpenAI.call_stream(*calls))
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
                                    "id": "call_Q",
                                    "type": "function",
                                    "function": {"name": "add", "arguments": '{"a": 5, "b": 6}'},
                                }
                            ],
                        },
                    }
                ],
                "usage": {"prompt_tokens": 11, "completion_tokens": 7},
            },
        )
    )
    provider = OpenAIProvider("m", base_url=wire_server.url, env={})
    out = []
    for stream in (True, False):
        request = ModelRequest(system=None, messages=[Message("user", "x")], stream=stream)
        events = [e async for e in provider.stream(request)]
        out.append(
            [json.dumps(e.__dict__, default=lambda o: o.__dict__, sort_keys=True) for e in events]
        )
    assert out[0] == out[1]
    await provider.aclose()
