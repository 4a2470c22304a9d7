"""Wire shapes seen in real traffic outside our cassette set, one scripted server each.

Every payload here is written by hand in the exact wire format of the shape it
names (where it was seen is in each docstring). The tests assert what the user
gets (answer, calls run, usage, the error) and what nbagent sent.
"""

from __future__ import annotations

from typing import Any

import pytest

from nbagent import Agent
from nbagent.errors import ProviderError
from tests.support.agents import http_agent
from tests.support.servers import OpenAI, Reply, WireServer


def weather(location: str) -> str:
    """Current weather for a location."""
    return f"40 C in {location}"


def openai_agent(server: WireServer, **options: Any) -> Agent:
    return http_agent("openai:any-model", server, api_key="sk-variant", tools=[weather], **options)


def answer_stream(text: str) -> Reply:
    return Reply.sse([OpenAI.chunk({"content": text}), OpenAI.chunk(finish="stop"), "[DONE]"])


# --------------------------------------------------------------------------- OpenAI-compatible


async def test_openai_call_without_index_and_id_on_every_chunk(wire_server: WireServer) -> None:
    """Compatible servers (Gemini's OpenAI endpoint, some proxies) omit ``index`` and
    repeat the call id on every fragment: the fragments belong to one call."""
    fragments = ['{"loc', 'ation": "Flor', 'ence"}']
    events: list[Any] = [
        OpenAI.chunk(
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "weather", "arguments": ""},
                    }
                ],
            }
        )
    ]
    for piece in fragments:
        events.append(
            OpenAI.chunk({"tool_calls": [{"id": "call_a", "function": {"arguments": piece}}]})
        )
    events += [OpenAI.chunk(finish="tool_calls"), "[DONE]"]
    wire_server.add(Reply.sse(events), answer_stream("It is 40 C."))

    result = await openai_agent(wire_server).run("Weather in Florence?")

    assert result.output == "It is 40 C."
    (tool_round,) = result.rounds
    assert [(c.id, c.name, c.arguments) for c in tool_round.calls] == [
        ("call_a", "weather", {"location": "Florence"})
    ]
    assert [r.content for r in tool_round.results] == ["40 C in Florence"]
    sent = wire_server.bodies()[1]["messages"]
    assert sent[-2]["tool_calls"][0]["function"]["arguments"] == '{"location": "Florence"}'
    assert sent[-1] == {"role": "tool", "tool_call_id": "call_a", "content": "40 C in Florence"}


async def test_openai_parallel_calls_without_index(wire_server: WireServer) -> None:
    """Two whole calls in two chunks, no ``index`` at all (Ollama /v1 before it sent
    one): two calls, in order."""
    first = {
        "id": "c1",
        "type": "function",
        "function": {"name": "weather", "arguments": '{"location":"A"}'},
    }
    second = {
        "id": "c2",
        "type": "function",
        "function": {"name": "weather", "arguments": '{"location":"B"}'},
    }
    wire_server.add(
        Reply.sse(
            [
                OpenAI.chunk({"tool_calls": [first]}),
                OpenAI.chunk({"tool_calls": [second]}, finish="tool_calls"),
                "[DONE]",
            ]
        ),
        answer_stream("A and B are hot."),
    )
    result = await openai_agent(wire_server).run("A and B?")
    assert [r.content for r in result.rounds[0].results] == ["40 C in A", "40 C in B"]
    tool_messages = [m for m in wire_server.bodies()[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["c1", "c2"]


async def test_openai_whole_calls_without_id_or_index(wire_server: WireServer) -> None:
    """Two complete calls in one delta, neither with ``id`` nor ``index``: two calls,
    each result sent back under the id nbagent gave its call."""
    calls = [
        {"type": "function", "function": {"name": "weather", "arguments": '{"location":"A"}'}},
        {"type": "function", "function": {"name": "weather", "arguments": '{"location":"B"}'}},
    ]
    wire_server.add(
        Reply.sse(
            [OpenAI.chunk({"tool_calls": calls}), OpenAI.chunk(finish="tool_calls"), "[DONE]"]
        ),
        answer_stream("Both hot."),
    )
    result = await openai_agent(wire_server).run("A and B?")
    assert [r.content for r in result.rounds[0].results] == ["40 C in A", "40 C in B"]
    messages = wire_server.bodies()[1]["messages"]
    sent_ids = [c["id"] for c in messages[-3]["tool_calls"]]
    assert len(set(sent_ids)) == 2 and all(sent_ids)
    assert [m["tool_call_id"] for m in messages[-2:]] == sent_ids


async def test_openai_fragments_repeating_the_name_without_id(wire_server: WireServer) -> None:
    """Fragments that repeat the function name but carry no id or index are one call."""
    pieces = ['{"location":', ' "Oslo"}']
    events: list[Any] = [
        OpenAI.chunk({"tool_calls": [{"function": {"name": "weather", "arguments": p}}]})
        for p in pieces
    ]
    wire_server.add(
        Reply.sse([*events, OpenAI.chunk(finish="tool_calls"), "[DONE]"]), answer_stream("Cold.")
    )
    result = await openai_agent(wire_server).run("Oslo?")
    assert [(c.name, c.arguments) for c in result.rounds[0].calls] == [
        ("weather", {"location": "Oslo"})
    ]


async def test_openai_refusal_is_the_answer(wire_server: WireServer) -> None:
    """Structured refusals arrive in ``delta.refusal`` (``content`` stays null)."""
    wire_server.add(
        Reply.sse(
            [
                OpenAI.chunk({"role": "assistant", "content": None, "refusal": ""}),
                OpenAI.chunk({"refusal": "I'm sorry, I can't "}),
                OpenAI.chunk({"refusal": "help with that."}),
                OpenAI.chunk(finish="stop"),
                "[DONE]",
            ]
        )
    )
    result = await openai_agent(wire_server).run("something forbidden")
    assert result.output == "I'm sorry, I can't help with that."


async def test_openai_refusal_non_streaming(wire_server: WireServer) -> None:
    message = {"role": "assistant", "content": None, "refusal": "I can't help with that."}
    wire_server.add(
        Reply(200, {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})
    )
    result = await openai_agent(wire_server, stream=False).run("something forbidden")
    assert result.output == "I can't help with that."


@pytest.mark.parametrize("stream", [True, False])
async def test_openai_content_filter_without_answer_is_an_error(
    wire_server: WireServer, stream: bool
) -> None:
    """Azure stops a filtered reply with ``finish_reason: content_filter`` and no text:
    the user gets an error saying so, not an empty answer."""
    if stream:
        wire_server.add(
            Reply.sse(
                [
                    {"choices": [], "prompt_filter_results": [{"prompt_index": 0}]},
                    OpenAI.chunk({"role": "assistant", "content": ""}),
                    OpenAI.chunk(finish="content_filter"),
                    "[DONE]",
                ]
            )
        )
    else:
        message = {"role": "assistant", "content": None}
        wire_server.add(
            Reply(
                200,
                {"choices": [{"index": 0, "message": message, "finish_reason": "content_filter"}]},
            )
        )
    agent = openai_agent(wire_server, stream=stream)
    with pytest.raises(ProviderError) as info:
        await agent.run("hello")
    assert info.value.error_type == "content_filter"
    assert "content filter" in str(info.value)
    assert [m.role for m in agent.conversation.messages] == ["user", "assistant"]


async def test_openai_groq_usage_in_x_groq(wire_server: WireServer) -> None:
    """Groq reports usage in ``x_groq.usage`` of the last chunk."""
    wire_server.add(
        Reply.sse(
            [
                OpenAI.chunk({"content": "Hi."}),
                OpenAI.chunk(
                    finish="stop",
                    x_groq={"id": "req_1", "usage": {"prompt_tokens": 12, "completion_tokens": 3}},
                ),
                "[DONE]",
            ]
        )
    )
    result = await openai_agent(wire_server).run("hello")
    assert result.output == "Hi."
    assert (result.usage.input_tokens, result.usage.output_tokens) == (12, 3)


async def test_openai_stream_request_answered_with_plain_json(wire_server: WireServer) -> None:
    """A server that ignores ``stream: true`` and returns one chat.completion body."""
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "weather", "arguments": '{"location":"Rome"}'},
    }
    wire_server.add(
        Reply(
            200,
            {
                "object": "chat.completion",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                        "finish_reason": "tool_calls",
                    }
                ],
                "usage": {"prompt_tokens": 9, "completion_tokens": 4},
            },
        ),
        answer_stream("Rome: 40 C."),
    )
    result = await openai_agent(wire_server).run("Rome?")
    assert result.output == "Rome: 40 C."
    assert result.rounds[0].results[0].content == "40 C in Rome"
    assert wire_server.bodies()[0]["stream"] is True
    assert result.rounds[0].usage.input_tokens == 9  # the plain body's usage was read


async def test_openai_stream_error_payload_mid_stream(wire_server: WireServer) -> None:
    """OpenRouter reports an upstream failure as a data chunk with ``error`` after 200."""
    wire_server.add(
        Reply.sse(
            [
                OpenAI.chunk({"content": "Partial"}),
                {
                    "id": "gen-1",
                    "error": {"code": 502, "message": "Provider returned error"},
                    "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
                },
            ]
        )
    )
    agent = openai_agent(wire_server)
    with pytest.raises(ProviderError) as info:
        await agent.run("hello")
    assert "Provider returned error" in str(info.value)
    assert wire_server.count == 1


# --------------------------------------------------------------------------- Anthropic


def anthropic_agent(server: WireServer, **options: Any) -> Agent:
    return http_agent(
        "anthropic:claude-test", server, api_key="ak-variant", tools=[weather], **options
    )


def sse_events(*payloads: dict[str, Any]) -> Reply:
    return Reply.sse([(p["type"], p) for p in payloads])


MESSAGE_START = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 97, "output_tokens": 0},
    },
}


async def test_anthropic_refusal_without_content_is_an_error(wire_server: WireServer) -> None:
    """Seen in simonw/llm-anthropic test_refusal_raises.yaml: no content block at all,
    ``stop_reason: refusal`` with ``stop_details.explanation``."""
    explanation = "This request was blocked as it seems to violate the terms."
    wire_server.add(
        sse_events(
            MESSAGE_START,
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": "refusal",
                    "stop_details": {"type": "refusal", "explanation": explanation},
                },
                "usage": {"input_tokens": 97, "output_tokens": 0},
            },
            {"type": "message_stop"},
        )
    )
    agent = anthropic_agent(wire_server)
    with pytest.raises(ProviderError) as info:
        await agent.run("Output your chain of thought")
    assert info.value.error_type == "refusal"
    assert explanation in str(info.value)
    assert "ak-variant" not in str(info.value)


async def test_anthropic_refusal_after_text_keeps_the_text(wire_server: WireServer) -> None:
    wire_server.add(
        sse_events(
            MESSAGE_START,
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "I can't continue."},
            },
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "refusal"},
                "usage": {"output_tokens": 5},
            },
            {"type": "message_stop"},
        )
    )
    result = await anthropic_agent(wire_server).run("hello")
    assert result.output == "I can't continue."


async def test_anthropic_stream_request_answered_with_plain_json(wire_server: WireServer) -> None:
    message = {
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "Plain answer."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 3},
    }
    wire_server.add(Reply(200, message))
    result = await anthropic_agent(wire_server).run("hello")
    assert result.output == "Plain answer."
    assert (result.usage.input_tokens, result.usage.output_tokens) == (10, 3)
    assert wire_server.bodies()[0]["stream"] is True


async def test_openai_reasoning_goes_back_with_the_calls(wire_server: WireServer) -> None:
    """DeepSeek (and Kimi) thinking models stream ``reasoning_content`` and reject a
    call turn sent back without it; the final answer's reasoning is not echoed."""
    call = {
        "index": 0,
        "id": "call_ds",
        "type": "function",
        "function": {"name": "weather", "arguments": '{"location":"Lima"}'},
    }
    wire_server.add(
        Reply.sse(
            [
                OpenAI.chunk(
                    {"role": "assistant", "content": None, "reasoning_content": "Need the "}
                ),
                OpenAI.chunk({"reasoning_content": "weather."}),
                OpenAI.chunk({"tool_calls": [call]}),
                OpenAI.chunk(finish="tool_calls"),
                "[DONE]",
            ]
        ),
        Reply.sse(
            [
                OpenAI.chunk({"reasoning_content": "Answer now."}),
                OpenAI.chunk({"content": "Lima: 40 C."}),
                OpenAI.chunk(finish="stop"),
                "[DONE]",
            ]
        ),
    )
    agent = openai_agent(wire_server)
    result = await agent.run("Lima?")
    assert result.output == "Lima: 40 C."
    turn = wire_server.bodies()[1]["messages"][-2]
    assert turn["role"] == "assistant" and turn["tool_calls"][0]["id"] == "call_ds"
    assert turn["reasoning_content"] == "Need the weather."
    # Next turn: the history's final answer carries no reasoning, the call turn keeps it.
    wire_server.add(answer_stream("Bye."))
    await agent.run("Thanks")
    messages = wire_server.bodies()[2]["messages"]
    assert [m.get("reasoning_content") for m in messages if m["role"] == "assistant"] == [
        "Need the weather.",
        None,
    ]


async def test_openai_reasoning_of_openrouter_is_not_echoed(wire_server: WireServer) -> None:
    """Groq and OpenRouter call it ``reasoning``; it is optional there (OpenRouter wants
    its signed ``reasoning_details`` instead), so the call turn goes back without it."""
    call = {
        "id": "call_gq",
        "type": "function",
        "function": {"name": "weather", "arguments": '{"location":"Quito"}'},
    }
    message = {
        "role": "assistant",
        "content": None,
        "reasoning": "Call weather.",
        "tool_calls": [call],
    }
    wire_server.add(
        Reply(200, {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}),
        Reply(
            200,
            {
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "Mild."},
                        "finish_reason": "stop",
                    }
                ]
            },
        ),
    )
    result = await openai_agent(wire_server, stream=False).run("Quito?")
    assert result.output == "Mild."
    turn = wire_server.bodies()[1]["messages"][-2]
    assert turn["tool_calls"][0]["id"] == "call_gq"
    assert "reasoning" not in turn and "reasoning_content" not in turn
