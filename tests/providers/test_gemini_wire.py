"""A scripted Gemini API server with fault injection, and the Gemini request encoding.

Each test scripts the exact wire traffic (``data:`` SSE events without a terminator,
or JSON bodies), runs a real Agent against it over 127.0.0.1 and asserts what the
server saw and what the user gets.
"""

from __future__ import annotations

import pytest

from nbagent import Agent, Tool
from nbagent.errors import ProviderError
from nbagent.messages import Usage
from nbagent.providers.gemini import GeminiProvider
from tests.support.agents import http_agent
from tests.support.servers import Gemini, Reply

KEY = "test-key-gemini-wire-91c3"


class Calls:
    def __init__(self) -> None:
        self.seen: list[dict] = []

        def add(a: int, b: int) -> int:
            """Add two numbers."""
            self.seen.append({"a": a, "b": b})
            return a + b

        self.tool = Tool(add)


def make_agent(server, tools=(), *, stream: bool = True, **options) -> Agent:
    return http_agent(
        "gemini:gemini-test", server, tools=list(tools), stream=stream, api_key=KEY,
        backoff=0.01, store=None, **options,
    )  # fmt: skip


def assert_history_valid(agent: Agent) -> None:
    for message in agent.conversation.messages:
        for tool_round in message.rounds or []:
            assert [r.call_id for r in tool_round.results] == [c.id for c in tool_round.calls]


# --------------------------------------------------------------------------- retries


async def test_429_retry_delay_is_honoured(wire_server):
    details = [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.05s"},
    ]
    wire_server.add(
        Gemini.error(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted", details),
        Gemini.text_stream("Hello."),
    )
    result = await make_agent(wire_server).run("hi")
    assert result.output == "Hello."
    assert wire_server.count == 2


async def test_429_with_retry_after_header(wire_server):
    wire_server.add(
        Gemini.error(429, "RESOURCE_EXHAUSTED", "slow down", headers={"retry-after": "0.05"}),
        Gemini.text_stream("Ok."),
    )
    assert (await make_agent(wire_server).run("hi")).output == "Ok."
    assert wire_server.count == 2


async def test_daily_quota_429_is_not_retried(wire_server):
    message = "You exceeded your current quota, please check your plan and billing details."
    wire_server.add(Gemini.error(429, "RESOURCE_EXHAUSTED", message), Gemini.text_stream("never"))
    with pytest.raises(ProviderError) as caught:
        await make_agent(wire_server).run("hi")
    assert caught.value.status == 429 and caught.value.message.startswith("You exceeded")
    assert wire_server.count == 1


async def test_500_then_503_then_success_non_streaming(wire_server):
    answer = Gemini.chunk({"text": "Recovered."}, finish="STOP", usage=(7, 2))
    wire_server.add(
        Gemini.error(500, "INTERNAL", "An internal error has occurred."),
        Gemini.error(503, "UNAVAILABLE", "The model is overloaded."),
        Reply(200, answer),
    )
    result = await make_agent(wire_server, stream=False).run("hi")
    assert result.output == "Recovered."
    assert result.usage == Usage(7, 2)
    assert wire_server.count == 3
    assert wire_server.requests[-1].path == "/v1beta/models/gemini-test:generateContent"


async def test_slow_first_byte_past_the_timeout_is_retried(wire_server):
    wire_server.add(
        Gemini.text_stream("late", first_byte_delay=1.5), Gemini.text_stream("On time.")
    )
    provider = GeminiProvider(
        "gemini-test", base_url=wire_server.url, api_key=KEY, backoff=0.01, timeout=0.3
    )
    result = await Agent(provider, tools=[], store=None).run("hi")
    assert result.output == "On time."
    assert wire_server.count == 2


# --------------------------------------------------------------------------- streams


async def test_stream_without_terminator_is_normal(wire_server):
    wire_server.add(Gemini.text_stream("No [DONE] needed."))
    result = await make_agent(wire_server).run("hi")
    assert result.output == "No [DONE] needed."
    assert (
        wire_server.requests[0].path == "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
    )


async def test_reset_mid_stream_runs_no_tool(wire_server):
    reply = Reply.sse(
        [
            Gemini.chunk({"text": "Adding. "}),
            Gemini.chunk(Gemini.call_part("add", "sig", a=1, b=2)),
            Gemini.chunk({"text": "more"}),
        ],
        drop_after=2,
    )
    wire_server.add(reply)
    calls = Calls()
    agent = make_agent(wire_server, [calls.tool])
    with pytest.raises(ProviderError) as caught:
        await agent.run("add")
    assert caught.value.error_type == "connection_error"
    assert calls.seen == []
    assert wire_server.count == 1
    assert_history_valid(agent)


async def test_invalid_json_chunk(wire_server):
    reply = Gemini.text_stream("Hello")
    reply.chunks.insert(1, b'data: {"candidates": [{"content": \r\n\r\n')
    wire_server.add(reply)
    with pytest.raises(ProviderError) as caught:
        await make_agent(wire_server).run("hi")
    assert caught.value.error_type == "malformed_chunk"
    assert wire_server.count == 1


async def test_error_payload_inside_a_200_stream(wire_server):
    error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    wire_server.add(Reply.sse([Gemini.chunk({"text": "Part"}), error]))
    with pytest.raises(ProviderError) as caught:
        await make_agent(wire_server).run("hi")
    assert caught.value.error_type == "UNAVAILABLE"
    assert "overloaded" in caught.value.message


async def test_empty_stream_is_an_error(wire_server):
    wire_server.add(Reply(200, b"", headers={"content-type": "text/event-stream"}, chunks=[]))
    with pytest.raises(ProviderError) as caught:
        await make_agent(wire_server).run("hi")
    assert caught.value.error_type == "empty_response"


async def test_blocked_prompt_and_malformed_call_are_reported(wire_server):
    wire_server.add(
        Reply(200, {"promptFeedback": {"blockReason": "SAFETY"}}),
        Reply(
            200,
            {
                "candidates": [
                    {"finishReason": "MALFORMED_FUNCTION_CALL", "finishMessage": "Malformed call"}
                ]
            },
        ),
    )
    agent = make_agent(wire_server, stream=False)
    with pytest.raises(ProviderError) as caught:
        await agent.run("bad")
    assert caught.value.error_type == "prompt_blocked" and "SAFETY" in caught.value.message
    with pytest.raises(ProviderError) as caught:
        await agent.run("again")
    assert caught.value.error_type == "MALFORMED_FUNCTION_CALL"
    assert "Malformed call" in caught.value.message
    assert_history_valid(agent)


# --------------------------------------------------------------------------- encoding


async def test_calls_without_ids_signatures_and_forced_final_answer(wire_server):
    """Parallel calls without ids (signature on the first part only), one failing; then the
    forced final answer: one functionResponse per call in order with output/error, the
    final instruction after them in the same user content, tools kept with mode NONE."""
    wire_server.add(
        Reply.sse(
            [
                Gemini.chunk({"text": "**thinking**", "thought": True}),
                Gemini.chunk(
                    Gemini.call_part("add", "U2lnbmF0dXJl+/A=", a=2, b=3),
                    Gemini.call_part("add", a="x", b=1),
                    finish="STOP",
                    usage=(30, 8),
                ),
            ]
        ),
        Gemini.text_stream("Five.", usage=(50, 2)),
    )
    calls = Calls()
    agent = make_agent(wire_server, [calls.tool])
    result = await agent.run("add", max_rounds=1)
    assert result.output == "Five."  # the thought part is not answer text
    assert result.rounds[0].assistant_text is None
    assert calls.seen == [{"a": 2, "b": 3}]
    assert result.usage == Usage(80, 10)

    first, second = wire_server.bodies()
    assert first["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}
    assert first["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "add",
                    "description": "Add two numbers.",
                    "parameters": {
                        "type": "OBJECT",
                        "properties": {"a": {"type": "INTEGER"}, "b": {"type": "INTEGER"}},
                        "required": ["a", "b"],
                    },
                }
            ]
        }
    ]
    contents = second["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert contents[1]["parts"] == [
        {
            "functionCall": {"name": "add", "args": {"a": 2, "b": 3}},
            "thoughtSignature": "U2lnbmF0dXJl+/A=",
        },
        {"functionCall": {"name": "add", "args": {"a": "x", "b": 1}}},
    ]
    responses = contents[2]["parts"]
    assert responses[0] == {"functionResponse": {"name": "add", "response": {"output": "5"}}}
    assert list(responses[1]["functionResponse"]["response"]) == ["error"]
    assert "Do not call any more tools" in responses[2]["text"]
    assert len(responses) == 3
    assert second["tools"] == first["tools"]
    assert second["toolConfig"] == {"functionCallingConfig": {"mode": "NONE"}}


async def test_server_given_call_ids_are_echoed(wire_server):
    wire_server.add(
        Reply(
            200,
            Gemini.chunk(
                Gemini.call_part("add", "c2ln", call_id="89nz05jy", a=1, b=1), finish="STOP"
            ),
        ),
        Reply(200, Gemini.chunk({"text": "Two.", "thoughtSignature": "dGV4dA=="}, finish="STOP")),
        Reply(200, Gemini.chunk({"text": "Yes."}, finish="STOP")),
    )
    calls = Calls()
    agent = make_agent(wire_server, [calls.tool], stream=False)
    await agent.run("1+1")
    result = await agent.run("sure?")
    assert result.output == "Yes."
    contents = wire_server.bodies()[2]["contents"]
    assert contents[1]["parts"][0]["functionCall"]["id"] == "89nz05jy"
    assert contents[2]["parts"][0]["functionResponse"]["id"] == "89nz05jy"
    # The final text's signature goes back on its part too.
    assert contents[3] == {
        "role": "model",
        "parts": [{"text": "Two.", "thoughtSignature": "dGV4dA=="}],
    }
    assert contents[4] == {"role": "user", "parts": [{"text": "sure?"}]}


async def test_generation_config_system_and_extra(wire_server):
    wire_server.add(Gemini.text_stream("ok"))
    provider = GeminiProvider(
        "models/gemini-test",
        base_url=wire_server.url + "/v1beta",
        api_key=KEY,
        extra_body={"generationConfig": {"thinkingConfig": {"includeThoughts": True}}},
    )
    agent = Agent(
        provider, tools=[], system="Be terse.", max_output_tokens=100, temperature=0.2, store=None
    )
    await agent.run("hi")
    body = wire_server.bodies()[0]
    assert body["systemInstruction"] == {"parts": [{"text": "Be terse."}]}
    assert body["generationConfig"] == {
        "temperature": 0.2,
        "maxOutputTokens": 100,
        "thinkingConfig": {"includeThoughts": True},
    }
    assert "tools" not in body and "toolConfig" not in body
    assert (
        wire_server.requests[0].path == "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
    )


async def test_env_keys_and_names(wire_server):
    wire_server.add(Gemini.text_stream("a"), Gemini.text_stream("b"))
    for env in ({"GEMINI_API_KEY": "k-gemini"}, {"GOOGLE_API_KEY": "k-google"}):
        env = {**env, "GOOGLE_GEMINI_BASE_URL": wire_server.url}
        agent = Agent("gemini:gemini-test", env=env, store=None, tools=[])
        await agent.run("hi")
    assert [r.headers["x-goog-api-key"] for r in wire_server.requests] == ["k-gemini", "k-google"]
    assert all("key=" not in r.url for r in wire_server.requests)


async def test_tool_names_outside_the_api_pattern_are_mapped_back(wire_server):
    seen = []

    def lookup(city: str) -> str:
        seen.append(city)
        return "sunny"

    tool = Tool(lookup, name="9 weather/lookup")
    wire_server.add(
        Reply.sse(
            [Gemini.chunk(Gemini.call_part("_9_weather_lookup", city="Oslo"), finish="STOP")]
        ),
        Gemini.text_stream("Sunny."),
    )
    result = await make_agent(wire_server, [tool]).run("weather?")
    assert result.output == "Sunny." and seen == ["Oslo"]
    declaration = wire_server.bodies()[0]["tools"][0]["functionDeclarations"][0]
    assert declaration["name"] == "_9_weather_lookup"
    assert result.rounds[0].calls[0].name == "9 weather/lookup"
