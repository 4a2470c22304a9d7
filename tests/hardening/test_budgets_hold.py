"""Budgets that hold (issue 19, items 15 and 17), over real loopback HTTP.

Hostile or careless compatible servers: one that ignores ``max_tokens`` and streams
far past it, one that reports no usage at all. ``max_cost`` and ``max_total_tokens``
hold anyway, and a run at the cap still ends with a real answer.
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.agents import http_agent
from tests.support.servers import OpenAI, RecordedRequest, Reply, WireServer

CHAPTER = "All work and no play makes Jack a dull boy. " * 10  # 440 characters


def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}. " + "Details. " * 200


def endless(usage: dict[str, int] | None) -> Reply:
    """A reply that ignores max_tokens: 150 chunks (66 KB), then the usage it claims."""
    events: list[Any] = [OpenAI.chunk({"role": "assistant", "content": ""})]
    events += [OpenAI.chunk({"content": CHAPTER}) for _ in range(150)]
    events.append(OpenAI.chunk(finish="stop"))
    if usage is not None:
        events.append({"id": "chatcmpl-1", "choices": [], "usage": usage})
    return Reply.sse([*events, "[DONE]"])


def no_usage_text(text: str) -> Reply:
    """A streamed answer from a server that ignores stream_options: no usage chunk."""
    events: list[Any] = [OpenAI.chunk({"content": text}), OpenAI.chunk(finish="stop"), "[DONE]"]
    return Reply.sse(events)


def no_usage_call(call_id: str, city: str) -> Reply:
    args = json.dumps({"city": city})
    delta = OpenAI.tool_delta(0, id=call_id, name="lookup", args=args)
    return Reply.sse([OpenAI.chunk(delta), OpenAI.chunk(finish="tool_calls"), "[DONE]"])


# --------------------------------------------------------------------------- max_cost


def test_one_streamed_reply_cannot_pass_max_cost(wire_server: WireServer) -> None:
    """The $20 reply: no max_tokens was sent and the stream was read to its end."""
    cap = 0.0005
    wire_server.add(endless({"prompt_tokens": 30, "completion_tokens": 50_000_000}))
    agent = http_agent("openai:gpt-4o-mini", wire_server, tools=[], max_cost=cap, store=None)
    result = agent.run_sync("Write a long story")
    sent = wire_server.bodies()[0]["max_tokens"]
    assert 0 < sent <= cap / 0.6e-6  # what the budget pays for (gpt-4o-mini: $0.60/M out)
    assert result.usage.cost is not None and 0 < result.usage.cost <= cap
    assert result.stop_reason == "cost_budget"
    assert result.output and (CHAPTER * 150).startswith(result.output)
    assert len(result.output) < len(CHAPTER * 150)  # the stream was cut


def test_a_run_at_the_cost_cap_ends_with_a_real_answer(wire_server: WireServer) -> None:
    """A model that would call tools for ever: the last affordable request asks for the answer."""

    def responder(request: RecordedRequest) -> Reply:
        body = request.json()
        if body.get("tool_choice") == "none":
            return OpenAI.text_stream("Paris is sunny.")
        return OpenAI.call_stream((f"c{len(body['messages'])}", "lookup", '{"city": "Paris"}'))

    server = WireServer(responder=responder)
    try:
        cap = 0.002
        agent = http_agent("openai:gpt-4o-mini", server, tools=[lookup], max_cost=cap,
                           max_rounds=100, store=None)  # fmt: skip
        result = agent.run_sync("Weather in Paris?")
    finally:
        server.close()
    assert result.stop_reason == "cost_budget"
    assert result.output == "Paris is sunny."  # a real answer, not only "Stopped: ..."
    assert len(result.rounds) >= 2
    assert result.usage.cost is not None and result.usage.cost <= cap
    assert server.bodies()[-1]["tool_choice"] == "none"


# --------------------------------------------------------------------------- no usage


def test_no_usage_in_the_stream_is_estimated_and_enforced() -> None:
    budget = 6000
    calls = iter(range(1000))

    def responder(request: RecordedRequest) -> Reply:
        if request.json().get("tool_choice") == "none":
            return no_usage_text("Paris is sunny.")
        return no_usage_call(f"c{next(calls)}", "Paris")

    server = WireServer(responder=responder)
    try:
        agent = http_agent("openai:qwen", server, tools=[lookup], max_total_tokens=budget,
                           max_rounds=100, store=None)  # fmt: skip
        result = agent.run_sync("Weather in Paris?")
    finally:
        server.close()
    assert 0 < result.usage.total_tokens <= budget
    assert result.stop_reason == "token_budget" and result.output == "Paris is sunny."
    assert "tokens estimated: the server reported no usage" in result.notes
    assert "estimated" in result.mime_bundle()["text/plain"]  # the footer says so


def test_a_stream_past_the_token_budget_is_cut(wire_server: WireServer) -> None:
    wire_server.add(endless(None))
    agent = http_agent("openai:qwen", wire_server, tools=[], max_total_tokens=2000, store=None)
    result = agent.run_sync("Write a long story")
    assert 0 < result.usage.total_tokens <= 2000
    assert result.stop_reason == "token_budget"
    assert len(result.output) < len(CHAPTER * 150)
