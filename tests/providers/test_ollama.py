"""Ollama adapter against a scripted /api/chat server: host rules, wire format, faults."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent import Agent
from nbagent.errors import ProviderError
from nbagent.providers.ollama import OllamaProvider, ollama_base_url
from nbagent.tools import Tool
from tests.support.agents import http_agent
from tests.support.servers import Ollama, Reply, WireServer


@pytest.mark.parametrize(
    ("host", "url"),
    [
        (None, "http://127.0.0.1:11434"),
        ("", "http://127.0.0.1:11434"),
        ("0.0.0.0", "http://127.0.0.1:11434"),
        ("0.0.0.0:11434", "http://127.0.0.1:11434"),
        (":11435", "http://127.0.0.1:11435"),
        ("myhost", "http://myhost:11434"),
        ("myhost:8080", "http://myhost:8080"),
        ("http://myhost", "http://myhost:80"),
        ("https://myhost", "https://myhost:443"),
        ("https://ollama.com/api", "https://ollama.com:443"),
        ("http://10.0.0.5:9999/", "http://10.0.0.5:9999"),
        ("[::1]:11434", "http://[::1]:11434"),
        ("  127.0.0.1  ", "http://127.0.0.1:11434"),
    ],
)
def test_ollama_host_rules(host: str | None, url: str) -> None:
    assert ollama_base_url(host) == url
    env = {} if host is None else {"OLLAMA_HOST": host}
    assert OllamaProvider("qwen3", env=env).base_url == url


def get_weather(city: str) -> str:
    """Current weather."""
    seen.append(city)
    return f"18C in {city}"


seen: list[str] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    seen.clear()


def agent_for(server: WireServer, **options: Any) -> Agent:
    return http_agent("ollama:qwen3", server, api_key=None, tools=[Tool(get_weather)], **options)


@pytest.mark.parametrize("stream", [True, False])
async def test_tool_round_trip(wire_server: WireServer, stream: bool) -> None:
    if stream:
        wire_server.add(
            Reply.ndjson([Ollama.call_chunk("get_weather", {"city": "Paris"}), Ollama.done()]),
            Reply.ndjson([*Ollama.text_chunks("Mild, 18C."), Ollama.done()]),
        )
    else:
        wire_server.add(
            Reply(
                200,
                {
                    **Ollama.done(),
                    "message": {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [
                            {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
                        ],
                    },
                },
            ),
            Reply(
                200, {**Ollama.done(), "message": {"role": "assistant", "content": "Mild, 18C."}}
            ),
        )
    agent = agent_for(
        wire_server, system="Be brief.", stream=stream, temperature=0.1, max_output_tokens=64
    )
    result = await agent.run("Weather in Paris?")
    assert result.output == "Mild, 18C."
    assert seen == ["Paris"]
    assert result.stop_reason == "complete"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (40, 8)
    first, second = wire_server.bodies()
    assert first["stream"] is stream
    assert first["options"] == {"temperature": 0.1, "num_predict": 64}
    assert first["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    assert first["tools"][0]["function"]["name"] == "get_weather"
    call = result.rounds[0].calls[0]
    assert call.id  # generated: the server sent none
    assert second["messages"][2:] == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": call.id,
                    "function": {"index": 0, "name": "get_weather", "arguments": {"city": "Paris"}},
                }
            ],
        },
        {
            "role": "tool",
            "tool_name": "get_weather",
            "tool_call_id": call.id,
            "content": "18C in Paris",
        },
    ]
    assert wire_server.requests[0].path == "/api/chat"


async def test_streamed_rounds_reuse_one_connection(wire_server: WireServer) -> None:
    wire_server.add(
        Reply.ndjson([Ollama.call_chunk("get_weather", {"city": "Rome"}), Ollama.done()]),
        Reply.ndjson([*Ollama.text_chunks("Warm."), Ollama.done()]),
    )
    result = await agent_for(wire_server).run("Rome?")
    assert result.output == "Warm."
    assert wire_server.count == 2 and wire_server.connections == 1


async def test_server_ids_are_kept(wire_server: WireServer) -> None:
    chunk = Ollama.call_chunk("get_weather", {"city": "Oslo"})
    chunk["message"]["tool_calls"][0]["id"] = "call_x1"
    wire_server.add(
        Reply.ndjson([chunk, Ollama.done()]),
        Reply.ndjson([*Ollama.text_chunks("Cold."), Ollama.done()]),
    )
    result = await agent_for(wire_server).run("Oslo?")
    assert result.rounds[0].calls[0].id == "call_x1"
    assert wire_server.bodies()[1]["messages"][-1]["tool_call_id"] == "call_x1"


async def test_forced_final_answer_omits_tools(wire_server: WireServer) -> None:
    wire_server.add(
        Reply.ndjson([Ollama.call_chunk("get_weather", {"city": "Rome"}), Ollama.done()]),
        Reply.ndjson([*Ollama.text_chunks("Warm."), Ollama.done()]),
    )
    result = await agent_for(wire_server, max_rounds=1).run("Rome?")
    assert result.output == "Warm." and result.stop_reason == "max_rounds"
    final = wire_server.bodies()[1]
    assert "tools" not in final
    assert [m["role"] for m in final["messages"]] == ["user", "assistant", "tool", "user"]


async def test_error_line_after_200(wire_server: WireServer) -> None:
    wire_server.add(
        Reply.ndjson([*Ollama.text_chunks("Hal"), {"error": "llama runner process has terminated"}])
    )
    with pytest.raises(ProviderError) as info:
        await agent_for(wire_server).run("hi")
    assert "llama runner process has terminated" in info.value.message


async def test_stream_without_done_line_runs_no_tool(wire_server: WireServer) -> None:
    wire_server.add(Reply.ndjson([Ollama.call_chunk("get_weather", {"city": "Paris"})]))
    agent = agent_for(wire_server)
    with pytest.raises(ProviderError) as info:
        await agent.run("hi")
    assert info.value.error_type == "incomplete_stream"
    assert seen == []
    assert agent.conversation.messages[-1].rounds == []


async def test_reset_mid_stream(wire_server: WireServer) -> None:
    reply = Reply.ndjson([*Ollama.text_chunks("abcdefghi"), Ollama.done()], drop_after=2)
    wire_server.add(reply)
    with pytest.raises(ProviderError) as info:
        await agent_for(wire_server).run("hi")
    assert info.value.error_type == "connection_error"
    assert wire_server.count == 1


async def test_malformed_line(wire_server: WireServer) -> None:
    reply = Reply.ndjson([*Ollama.text_chunks("abc"), Ollama.done()])
    assert reply.chunks is not None
    reply.chunks.insert(1, b'{"model": "qwen3", "message": \n')
    wire_server.add(reply)
    with pytest.raises(ProviderError) as info:
        await agent_for(wire_server).run("hi")
    assert info.value.error_type == "malformed_chunk"


@pytest.mark.parametrize(("status", "headers"), [(503, {}), (429, {"retry-after": "0"}), (502, {})])
async def test_busy_server_is_retried(wire_server: WireServer, status: int, headers: dict) -> None:
    wire_server.add(Reply(status, {"error": "server busy, please try again"}, headers=headers))
    wire_server.add(Reply.ndjson([*Ollama.text_chunks("ok"), Ollama.done()]))
    result = await agent_for(wire_server).run("hi")
    assert result.output == "ok"
    assert wire_server.count == 2


async def test_model_not_found(wire_server: WireServer) -> None:
    wire_server.add(Reply(404, {"error": "model 'qwen3' not found, try pulling it first"}))
    with pytest.raises(ProviderError) as info:
        await agent_for(wire_server).run("hi")
    assert info.value.status == 404
    assert str(info.value) == "ollama HTTP 404: model 'qwen3' not found, try pulling it first"


async def test_slow_first_byte(wire_server: WireServer) -> None:
    wire_server.add(Reply(200, Ollama.done(), first_byte_delay=1.0))
    with pytest.raises(ProviderError) as info:
        provider = OllamaProvider(
            "qwen3", base_url=wire_server.url, env={}, timeout=0.2, max_retries=0
        )
        await Agent(provider, tools=[Tool(get_weather)]).run("hi")
    assert info.value.error_type == "timeout"
    assert wire_server.count == 1


async def test_ollama_api_key_is_sent_and_redacted(wire_server: WireServer) -> None:
    key = "ollama-secret-key-42"
    wire_server.add(Reply(401, {"error": f"unauthorized {key}"}))
    provider = OllamaProvider("qwen3", base_url=wire_server.url, env={"OLLAMA_API_KEY": key})
    with pytest.raises(ProviderError) as info:
        await Agent(provider, tools=[]).run("hi")
    assert key not in str(info.value) and "OLLAMA_API_KEY" in str(info.value)
    assert wire_server.requests[0].headers["authorization"] == f"Bearer {key}"
    assert key not in repr(provider)
