"""Tool calls written as text, and <think> blocks, from servers without a tool parser.

The replies are format-exact copies of what llama.cpp (no ``--jinja``), vLLM (no
``--tool-call-parser``), Ollama and LM Studio send for Qwen/Hermes, Llama 3,
Mistral and fenced-JSON models; they go over real loopback HTTP in each wire
format, and once through the adapters' decoders split at every byte boundary.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from nbagent.messages import Message, ToolSpec
from nbagent.providers import ModelRequest
from nbagent.providers.base import Finished, TextChunk, ToolCallReady
from nbagent.providers.ollama import OllamaProvider
from nbagent.providers.openai import OpenAIProvider
from nbagent.tools import Tool
from tests.support.agents import http_agent
from tests.support.servers import Ollama, OpenAI, Reply, WireServer

QWEN = (
    "<think>\nThe user wants the weather. I should call get_weather.\n</think>\n\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
)
LLAMA3 = '{"name": "get_weather", "parameters": {"city": "Oslo"}}'
LLAMA3_TAG = '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Oslo"}}<|eom_id|>'
MISTRAL = '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Oslo"}}]'
MISTRAL_V11 = '[TOOL_CALLS]get_weather[ARGS]{"city": "Oslo"}'
FENCED = 'I will look it up.\n```json\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n```'

seen: list[str] = []


def get_weather(city: str) -> str:
    """Current weather of a city."""
    seen.append(city)
    return f"18C in {city}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    seen.clear()


def openai_text_stream(text: str, piece: int = 7) -> Reply:
    """llama.cpp / LM Studio style: the call arrives as content deltas, finish "stop"."""
    return OpenAI.text_stream(text, piece=piece)


def ollama_text_stream(text: str) -> Reply:
    return Reply.ndjson([*Ollama.text_chunks(text), Ollama.done()])


# (name, model string, reply carrying the text call, final answer reply)
STYLES: list[tuple[str, str, Reply, Reply]] = [
    ("llama.cpp qwen", "openai:qwen2.5-7b", openai_text_stream(QWEN), OpenAI.text_stream("Mild.")),
    ("vllm llama3", "openai:llama-3.1-8b", Reply(200, OpenAI.completion(LLAMA3)),
     OpenAI.text_reply("Mild.")),
    ("vllm llama3 tag", "openai:llama-3.1-8b", openai_text_stream(LLAMA3_TAG),
     OpenAI.text_stream("Mild.")),
    ("ollama qwen3", "ollama:qwen3", ollama_text_stream(QWEN),
     Reply.ndjson([*Ollama.text_chunks("Mild."), Ollama.done()])),
    ("ollama mistral", "ollama:mistral", ollama_text_stream(MISTRAL),
     Reply.ndjson([*Ollama.text_chunks("Mild."), Ollama.done()])),
    ("ollama mistral v11", "ollama:mistral", ollama_text_stream(MISTRAL_V11),
     Reply.ndjson([*Ollama.text_chunks("Mild."), Ollama.done()])),
    ("lm studio fenced", "openai:local-model", openai_text_stream(FENCED),
     OpenAI.text_stream("Mild.")),
]  # fmt: skip


@pytest.mark.parametrize(
    ("style", "model", "call_reply", "answer"), STYLES, ids=[s[0] for s in STYLES]
)
async def test_text_calls_run_as_real_calls(
    wire_server: WireServer, style: str, model: str, call_reply: Reply, answer: Reply
) -> None:
    wire_server.add(call_reply, answer)
    stream = call_reply.chunks is not None
    agent = http_agent(model, wire_server, api_key=None, tools=[Tool(get_weather)], stream=stream)
    result = await agent.run("Weather in Oslo?")

    assert seen == ["Oslo"]
    assert result.output == "Mild."
    assert result.stop_reason == "complete"
    (tool_round,) = result.rounds
    assert [(c.name, c.arguments) for c in tool_round.calls] == [("get_weather", {"city": "Oslo"})]
    for marker in ("<tool_call>", "python_tag", "[TOOL_CALLS]", "```", "<think>"):
        assert marker not in (tool_round.assistant_text or "")
    # The next request carries the call in the API's own form, and its result.
    messages = wire_server.bodies()[1]["messages"]
    call_turn = next(m for m in messages if m.get("tool_calls"))
    assert call_turn["tool_calls"][0]["function"]["name"] == "get_weather"
    assert "<tool_call>" not in call_turn["content"]
    assert messages[-1]["role"] == "tool" and messages[-1]["content"] == "18C in Oslo"
    if "<think>" in (QWEN if "qwen" in style else ""):
        data = tool_round.provider_data or {}
        assert data["thinking"] == "The user wants the weather. I should call get_weather."
        if model.startswith("ollama"):  # Ollama takes the reasoning back with the call turn
            assert call_turn["thinking"] == data["thinking"]
        html = result.mime_bundle()["text/html"]
        assert 'class="nba-thinking"' in html and "I should call get_weather" in html


async def test_switched_off_the_text_is_the_answer(wire_server: WireServer) -> None:
    wire_server.add(openai_text_stream(QWEN))
    agent = http_agent(
        "openai:qwen", wire_server, api_key=None, tools=[Tool(get_weather)], text_tool_calls=False
    )
    result = await agent.run("Weather in Oslo?")
    assert result.output == QWEN
    assert seen == [] and result.rounds == []


async def test_a_call_to_a_tool_not_offered_is_never_run(wire_server: WireServer) -> None:
    text = '<tool_call>\n{"name": "delete_files", "arguments": {"path": "/"}}\n</tool_call>'
    wire_server.add(openai_text_stream(text), OpenAI.text_stream("I cannot delete files."))
    agent = http_agent("openai:qwen", wire_server, api_key=None, tools=[Tool(get_weather)])
    result = await agent.run("Clean up")
    assert seen == []
    # The model sees an error result, not its markup as the answer.
    (only,) = result.rounds[0].results
    assert not only.ok and "Unknown tool 'delete_files'" in only.content
    assert result.output == "I cannot delete files."


async def test_native_calls_win_over_text(wire_server: WireServer) -> None:
    events: list[Any] = [
        OpenAI.chunk({"content": '```json\n{"name": "get_weather", '}),
        OpenAI.chunk({"content": '"arguments": {"city": "Rome"}}\n```'}),
    ]
    events += [
        OpenAI.chunk(OpenAI.tool_delta(0, id="call_1", name="get_weather", args='{"city": "Oslo"}'))
    ]
    events += [OpenAI.chunk(finish="tool_calls"), OpenAI.USAGE, "[DONE]"]  # fmt: skip
    wire_server.add(Reply.sse(events), OpenAI.text_stream("Mild."))
    agent = http_agent("openai:m", wire_server, api_key=None, tools=[Tool(get_weather)])
    result = await agent.run("Weather?")
    assert seen == ["Oslo"]
    assert '"Rome"' in (result.rounds[0].assistant_text or "")


async def test_forced_final_answer_recognises_no_calls(wire_server: WireServer) -> None:
    wire_server.add(
        openai_text_stream(QWEN), openai_text_stream("<think>done</think>Final: " + LLAMA3)
    )
    agent = http_agent("openai:m", wire_server, api_key=None, tools=[Tool(get_weather)],
                       max_rounds=1)  # fmt: skip
    result = await agent.run("Weather?")
    assert seen == ["Oslo"]
    assert result.stop_reason == "max_rounds"
    assert result.output == "Final: " + LLAMA3  # no tools were allowed: text stays text
    assert result.message is not None and result.message.provider_data == {"thinking": "done"}


# --------------------------------------------------------------------------- every split


def _request(stream: bool) -> ModelRequest:
    spec = ToolSpec("get_weather", "Weather.", {"type": "object", "properties": {}})
    return ModelRequest(None, [Message(role="user", content="hi")], tools=[spec], stream=stream)


def _summary(events: list[Any]) -> tuple[str, list[tuple[str, dict[str, Any]]], Any]:
    text = "".join(e.text for e in events if isinstance(e, TextChunk))
    calls = [(e.call.name, e.call.arguments) for e in events if isinstance(e, ToolCallReady)]
    finished = [e.provider_data for e in events if isinstance(e, Finished)]
    return text, calls, finished


def test_every_byte_boundary_gives_the_same_events() -> None:
    """Each style's whole HTTP body, cut in two at every byte, decodes to the same events."""
    cases = [
        (OpenAIProvider("m", base_url="http://127.0.0.1:9"), openai_text_stream(QWEN, piece=3)),
        (OpenAIProvider("m", base_url="http://127.0.0.1:9"), openai_text_stream(LLAMA3_TAG)),
        (OpenAIProvider("m", base_url="http://127.0.0.1:9"), openai_text_stream(FENCED, piece=5)),
        (OllamaProvider("qwen3", env={}), ollama_text_stream(QWEN)),
        (OllamaProvider("mistral", env={}), ollama_text_stream(MISTRAL)),
        (OllamaProvider("mistral", env={}), ollama_text_stream(MISTRAL_V11)),
    ]
    for provider, reply in cases:
        body = b"".join(reply.chunks or [reply.body_bytes()])
        whole = provider.decoder(_request(True))
        expected = _summary(whole.feed(body) + whole.close())
        assert expected[1] == [("get_weather", {"city": "Oslo"})], expected
        assert "<" not in expected[0] and "[TOOL" not in expected[0]
        for cut in range(1, len(body)):
            decoder = provider.decoder(_request(True))
            events = decoder.feed(body[:cut]) + decoder.feed(body[cut:]) + decoder.close()
            assert _summary(events) == expected, (body[:cut][-40:], cut)
        byte_by_byte = provider.decoder(_request(True))
        events = [e for i in range(len(body)) for e in byte_by_byte.feed(body[i : i + 1])]
        assert _summary(events + byte_by_byte.close()) == expected


def test_plain_answers_pass_through_unchanged() -> None:
    text = (
        "Use `ls`, [a link](x) and <b>tags</b>:\n```python\nprint('<tool_call>')\n```\n{\"a\": 1}"
    )
    body = b"".join(openai_text_stream(text, piece=2).chunks or [])
    provider = OpenAIProvider("m", base_url="http://127.0.0.1:9")
    for cut in range(1, len(body), 3):
        decoder = provider.decoder(_request(True))
        events = decoder.feed(body[:cut]) + decoder.feed(body[cut:]) + decoder.close()
        assert _summary(events)[:2] == (text, [])


def test_non_streamed_reply_of_every_style() -> None:
    provider = OpenAIProvider("m", base_url="http://127.0.0.1:9")
    for text in (QWEN, LLAMA3, LLAMA3_TAG, MISTRAL, MISTRAL_V11, FENCED):
        decoder = provider.decoder(_request(False))
        decoder.feed(json.dumps(OpenAI.completion(text)).encode())
        _, calls, _ = _summary(decoder.close())
        assert calls == [("get_weather", {"city": "Oslo"})], text


def test_native_reasoning_shows_in_the_thinking_panel_too() -> None:
    from nbagent.render.panels import thinking_html

    assert "pondering" in thinking_html({"ollama_thinking": "pondering"})
    assert "pondering" in thinking_html({"openai_reasoning": {"reasoning_content": "pondering"}})
    blocks = [{"type": "thinking", "thinking": "pondering", "signature": "sig"}]
    assert "pondering" in thinking_html({"anthropic_thinking": blocks})
    assert thinking_html(None) == thinking_html({"thinking": "  "}) == ""
