"""A scripted model behind the loopback server, in the Chat Completions and Ollama formats.

``ScriptedReplies`` (tests/support/scripted.py) is what suites outside tests/providers
use for "a real HTTP model": these runs show both adapters talk to it, streamed or
not, compressed or not, with call ids or without.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.agents import http_agent
from tests.support.scripted import Answer, ScriptedReplies
from tests.support.servers import WireServer


def weather(city: str) -> str:
    """The weather in a city."""
    return f"18 C in {city}"


def weather_script(body: dict[str, Any]) -> Answer:
    """Ask for the weather of the last word of the question once, then answer with it."""
    last = body["messages"][-1]
    if last["role"] == "user" and body.get("tools") and body.get("tool_choice") != "none":
        return Answer("Let me check.", [("weather", {"city": last["content"].split()[-1]})])
    results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    return Answer(f"The weather: {results[-1]}.")


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("model", ["openai:gpt-test", "ollama:qwen3"])
@pytest.mark.parametrize(("call_ids", "gzip"), [(True, False), (False, True)])
def test_a_tool_round_against_the_scripted_model(
    model: str, stream: bool, call_ids: bool, gzip: bool
) -> None:
    server = WireServer(responder=ScriptedReplies(weather_script, call_ids=call_ids, gzip=gzip))
    try:
        agent = http_agent(model, server, tools=[weather], stream=stream, store=None)
        result = agent.run_sync("Weather in Paris")
    finally:
        server.close()
    assert result.output == "The weather: 18 C in Paris."
    assert [(c.name, c.arguments) for c in result.rounds[0].calls] == [
        ("weather", {"city": "Paris"})
    ]
    call_id = result.rounds[0].calls[0].id
    if model.startswith("openai") and call_ids:
        assert call_id == "call_0001"
    assert server.bodies()[1]["messages"][-1]["role"] == "tool"
    assert result.usage.input_tokens > 0
