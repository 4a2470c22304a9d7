"""Recorded Ollama /api/chat traffic replayed over a loopback HTTP server.

The Prism recordings are response bodies only (no requests): the agent gets
tools with the recorded names, the server replays the bodies in order, and the
run must end with the recorded final text; the requests nbagent sent are
checked against Ollama's documented history format. The openllmetry cassette
holds a request whose history ends with a tool result: the adapter's expansion
of the same history must match it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from nbagent.messages import Message, ToolCall, ToolResult, ToolRound
from nbagent.providers import ModelRequest
from nbagent.providers.base import Finished, TextChunk, ToolCallReady, UsageReport
from nbagent.providers.ollama import OllamaProvider
from nbagent.tools import Tool
from tests.support.agents import http_agent
from tests.support.cassettes import (
    DATA,
    Cassette,
    load_bodies,
    load_cassette,
    replies_for,
    split_think,
)
from tests.support.servers import Ollama, Reply, WireServer

PRISM = DATA / "prism/ollama"

CONVERSATIONS = [
    # (files, streamed, tool names with their argument name, prompt)
    (
        ["stream-with-tools-1.sse", "stream-with-tools-2.sse", "stream-with-tools-3.sse"],
        True,
        "What time is the tigers game today in Detroit and should I wear a coat?",
    ),
    (
        [
            "at-394687620e4c/stream-multi-tool-conversation-1.json",
            "at-394687620e4c/stream-multi-tool-conversation-2.json",
        ],
        True,
        "What is the weather like in Paris?",
    ),
    (
        ["generate-text-with-multiple-tools-1.json", "generate-text-with-multiple-tools-2.json"],
        False,
        "What time is the tigers game today in Detroit and should I wear a coat?",
    ),
]


def _lines(cassette: Cassette, index: int) -> list[dict[str, Any]]:
    return [json.loads(x) for x in cassette.responses[index].body.splitlines() if x.strip()]


def _recorded_text(cassette: Cassette) -> str:
    return "".join(m["message"].get("content", "") for m in _lines(cassette, -1))


def _recorded_calls(cassette: Cassette, index: int) -> list[tuple[str, dict[str, Any]]]:
    return [
        (c["function"]["name"], c["function"]["arguments"])
        for m in _lines(cassette, index)
        for c in m["message"].get("tool_calls") or []
    ]


def weather(city: str) -> str:
    """Current weather for a city."""
    return f"75 degrees and sunny in {city}"


def search(query: str) -> str:
    """Search the web."""
    return "The Tigers game is today at 3pm in Detroit"


@pytest.mark.parametrize(("files", "streamed", "prompt"), CONVERSATIONS)
async def test_replay_prism_conversation(
    wire_server: WireServer, files: list[str], streamed: bool, prompt: str
) -> None:
    cassette = load_bodies([PRISM / f for f in files])
    wire_server.add(*replies_for(cassette))
    model = _lines(cassette, 0)[0]["model"]
    agent = http_agent(
        f"ollama:{model}",
        wire_server,
        api_key=None,
        tools=[Tool(weather), Tool(search)],
        stream=streamed,
    )
    result = await agent.run(prompt)

    # The recorded answer starts with qwen3's <think> block: it is the round's thinking
    # now, never part of the answer.
    thinking, answer = split_think(_recorded_text(cassette))
    assert result.output == answer
    if thinking:
        assert result.message is not None and result.message.provider_data
        assert result.message.provider_data["thinking"] == thinking
    assert result.stop_reason == "complete"  # done_reason "stop" after calls did not end the run
    assert wire_server.count == len(files)
    # Every recorded call ran, with the recorded arguments, in order.
    for index, tool_round in enumerate(result.rounds):
        assert [(c.name, c.arguments) for c in tool_round.calls] == _recorded_calls(cassette, index)
        assert all(c.id for c in tool_round.calls)  # ids generated: the server sent none
        assert len({c.id for c in tool_round.calls}) == len(tool_round.calls)
    last = _lines(cassette, -1)[-1]
    assert result.usage.output_tokens == sum(
        _lines(cassette, i)[-1].get("eval_count", 0) for i in range(len(files))
    )
    assert last["done"] is True

    # What nbagent sent: native /api/chat, explicit stream flag, tool history with tool_name.
    for number, request in enumerate(wire_server.requests):
        body = request.json()
        assert request.path == "/api/chat"
        assert body["stream"] is streamed
        assert body["model"] == model
        assert {t["function"]["name"] for t in body["tools"]} == {"weather", "search"}
        messages = body["messages"]
        assert messages[0] == {"role": "user", "content": prompt}
        expected_roles = ["user"]
        for tool_round in result.rounds[:number]:
            expected_roles += ["assistant"] + ["tool"] * len(tool_round.calls)
        assert [m["role"] for m in messages] == expected_roles
        for tool_round in result.rounds[:number]:
            sent_call = next(
                m
                for m in messages
                if m["role"] == "assistant" and m["tool_calls"][0]["id"] == tool_round.calls[0].id
            )
            assert [c["function"]["arguments"] for c in sent_call["tool_calls"]] == [
                c.arguments for c in tool_round.calls
            ]  # objects, not strings
            for call, res in zip(tool_round.calls, tool_round.results, strict=True):
                assert {
                    "role": "tool",
                    "tool_name": call.name,
                    "tool_call_id": call.id,
                    "content": res.content,
                } in messages


def test_expansion_matches_recorded_openllmetry_request() -> None:
    """The recorded request ends with an assistant tool call and its tool result."""
    cassette = load_cassette(DATA / "openllmetry/ollama/test_ollama_chat_tool_calls_legacy.yaml")
    recorded = cassette.requests[0].json()
    call = ToolCall("call_1", "get_current_weather", {"location": "San Francisco"})
    result = ToolResult("call_1", "get_current_weather", True, recorded["messages"][1]["content"])
    in_progress = Message("assistant", "", rounds=[ToolRound(None, [call], [result])])
    provider = OllamaProvider("llama3.1", env={})
    body = provider.build_body(
        ModelRequest(system=None, messages=[in_progress], tools=[], stream=False)
    )
    assert body["model"] == recorded["model"]
    assert body["stream"] is recorded["stream"] is False
    sent, theirs = body["messages"], recorded["messages"]
    assert [m["role"] for m in sent] == [m["role"] for m in theirs]
    assert [c["function"]["name"] for c in sent[0]["tool_calls"]] == ["get_current_weather"]
    assert (
        sent[0]["tool_calls"][0]["function"]["arguments"]
        == (theirs[0]["tool_calls"][0]["function"]["arguments"])
    )
    assert sent[1]["content"] == theirs[1]["content"]
    assert sent[1]["tool_name"] == "get_current_weather"


async def test_replay_openllmetry_answer(wire_server: WireServer) -> None:
    cassette = load_cassette(DATA / "openllmetry/ollama/test_ollama_chat_tool_calls_legacy.yaml")
    wire_server.add(*replies_for(cassette))
    provider = OllamaProvider("llama3.1", base_url=wire_server.url, env={})
    events = [
        e
        async for e in provider.stream(
            ModelRequest(system=None, messages=[Message("user", "hi")], stream=False)
        )
    ]
    text = "".join(e.text for e in events if isinstance(e, TextChunk))
    assert text == cassette.responses[0].json()["message"]["content"]
    usage = next(e.usage for e in events if isinstance(e, UsageReport))
    assert (usage.input_tokens, usage.output_tokens) == (44, 113)
    assert isinstance(events[-1], Finished) and events[-1].stop_reason == "stop"
    assert not [e for e in events if isinstance(e, ToolCallReady)]
    await provider.aclose()


async def test_replay_streamed_joke(wire_server: WireServer) -> None:
    """A real NDJSON stream, served in 97-byte pieces that cut lines and characters."""
    cassette = load_cassette(DATA / "openllmetry/ollama/test_ollama_streaming_chat_legacy.yaml")
    (reply,) = replies_for(cassette)
    reply.chunk_delay = 0.002  # separate network reads, so text arrives in pieces
    wire_server.add(reply)
    agent = http_agent("ollama:llama3", wire_server, api_key=None, tools=[])
    chunks = []
    async for event in agent.stream("Tell me a joke about OpenTelemetry"):
        if type(event).__name__ == "TextDelta":
            chunks.append(event.text)  # type: ignore[attr-defined]
    expected = "".join(m["message"]["content"] for m in _lines(cassette, 0))
    assert "".join(chunks) == expected == agent.last_result.output  # type: ignore[union-attr]
    assert len(chunks) > 10  # it really streamed
    assert "tools" not in wire_server.requests[0].json()  # no tools, none declared


async def test_replay_does_not_support_tools_error(wire_server: WireServer) -> None:
    cassette = load_cassette(DATA / "langchaingo/ollama/TestToolCall.httprr")
    wire_server.add(*replies_for(cassette))
    agent = http_agent(
        "ollama:gemma3:1b", wire_server, api_key=None, tools=[Tool(weather)], stream=False
    )
    # The recorded 400 "does not support tools", then an answer to the retry without them.
    wire_server.add(
        Reply(200, {**Ollama.done(), "message": {"role": "assistant", "content": "It is Tuesday."}})
    )
    result = await agent.run("Which date do we have today?")
    assert result.output == "It is Tuesday."
    assert result.stop_reason == "complete"
    assert "this model does not support tools; answered without them" in result.notes
    assert wire_server.count == 2
    assert "tools" not in wire_server.requests[1].json()
    sent, recorded = wire_server.requests[0].json(), cassette.requests[0].json()
    assert sent["model"] == recorded["model"] == "gemma3:1b"
    assert sent["stream"] is recorded["stream"] is False
