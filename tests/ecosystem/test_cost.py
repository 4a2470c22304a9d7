"""Cost: genai-prices' price per request and per run, None when unknown, and the max_cost cap."""

from __future__ import annotations

import pytest
from genai_prices import Usage as PriceUsage
from genai_prices import calc_price

from nbagent import ConfigError
from tests.support.agents import http_agent
from tests.support.scripted import Answer, ScriptedReplies
from tests.support.servers import OpenAI, Reply, WireServer


def expected(model: str, provider: str, **tokens: int) -> float:
    return float(calc_price(PriceUsage(**tokens), model, provider_id=provider).total_price)


def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def weather_script(body: dict) -> Answer:
    if body["messages"][-1]["role"] == "user":
        return Answer("", [("lookup", {"city": "Paris"})])
    return Answer("It is sunny.")


@pytest.fixture
def server():
    server = WireServer(responder=ScriptedReplies(weather_script))
    yield server
    server.close()


def test_known_model_is_priced_per_round_and_per_run(server):
    agent = http_agent("openai:gpt-4o-mini", server, tools=[lookup], store=None)
    result = agent.run_sync("Weather in Paris?")
    assert result.stop_reason == "complete"
    # ScriptedReplies: 20 input tokens per message sent, 7 output tokens per reply.
    first = expected("gpt-4o-mini", "openai", input_tokens=20, output_tokens=7)
    second = expected("gpt-4o-mini", "openai", input_tokens=60, output_tokens=7)
    assert result.rounds[0].usage.cost == pytest.approx(first)
    assert result.usage.cost == pytest.approx(first + second)
    assert result.usage.cost > 0
    text = result.mime_bundle()["text/plain"]
    assert "$" in text.splitlines()[-1] or any("$" in line for line in text.splitlines())


def test_unknown_model_has_no_cost_and_no_made_up_number(server):
    agent = http_agent("openai:gpt-test-unknown", server, tools=[lookup], store=None)
    result = agent.run_sync("Weather in Paris?")
    assert result.usage.cost is None
    assert result.rounds[0].usage.cost is None
    assert "$" not in result.mime_bundle()["text/plain"]


def test_cached_and_reasoning_tokens_are_counted_apart():
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 300,
        "prompt_tokens_details": {"cached_tokens": 800},
        "completion_tokens_details": {"reasoning_tokens": 200},
    }
    server = WireServer().add(Reply(200, {**OpenAI.completion("Hi."), "usage": usage}))
    try:
        agent = http_agent("openai:gpt-4o-mini", server, stream=False, store=None, tools=[])
        result = agent.run_sync("Hello")
    finally:
        server.close()
    assert result.usage.cache_read_tokens == 800
    assert result.usage.reasoning_tokens == 200
    cached = expected(
        "gpt-4o-mini", "openai", input_tokens=1000, output_tokens=300, cache_read_tokens=800
    )
    assert result.usage.cost == pytest.approx(cached)
    assert cached < expected("gpt-4o-mini", "openai", input_tokens=1000, output_tokens=300)


def test_a_cap_smaller_than_one_request_sends_nothing(server):
    agent = http_agent("openai:gpt-4o-mini", server, tools=[lookup], max_cost=1e-9, store=None)
    result = agent.run_sync("Weather in Paris?")
    assert result.stop_reason == "cost_budget"
    assert server.count == 0
    assert "max_cost" in result.output
    assert result.usage.total_tokens == 0


def test_the_cap_keeps_room_for_a_final_answer(server):
    cap = 1.2e-4  # room for one round and a final answer, not for a second round
    agent = http_agent("openai:gpt-4o-mini", server, tools=[lookup], max_cost=cap, store=None)
    result = agent.run_sync("Weather in Paris?")
    assert result.stop_reason == "cost_budget"
    assert server.count == 2 and server.bodies()[1]["tool_choice"] == "none"
    assert len(result.rounds) == 1 and result.rounds[0].results[0].ok
    # A final answer from what was gathered, like max_rounds.
    assert "lookup: sunny in Paris" in result.output
    assert result.usage.cost is not None and result.usage.cost <= cap
    assert agent.conversation.messages[-1].stop_reason == "cost_budget"


def test_a_cap_on_an_unpriced_model_is_refused_before_any_request(server):
    agent = http_agent("openai:gpt-test-unknown", server, tools=[lookup], max_cost=0.5, store=None)
    with pytest.raises(ConfigError, match="no price"):
        agent.run_sync("Weather in Paris?")
    assert server.count == 0


def test_other_providers_are_priced_by_the_ids_they_declare():
    from nbagent.cost import price
    from nbagent.messages import Usage
    from nbagent.providers import get_provider
    from nbagent.testing import ScriptedModel

    usage = Usage(1000, 100)
    env: dict[str, str] = {}
    anthropic = get_provider("anthropic:claude-sonnet-4-5", api_key="test-key", env=env)
    assert price(anthropic, usage) == pytest.approx(
        expected("claude-sonnet-4-5", "anthropic", input_tokens=1000, output_tokens=100)
    )
    gemini = get_provider("gemini:gemini-2.5-flash", api_key="test-key", env=env)
    assert price(gemini, usage) == pytest.approx(
        expected("gemini-2.5-flash", "google", input_tokens=1000, output_tokens=100)
    )
    ollama = get_provider("ollama:llama3.2", env=env)
    assert price(ollama, usage) is None  # a local model has no list price
    assert price(ScriptedModel(), usage) is None


def test_a_steps_run_honours_the_cap_too(server):
    agent = http_agent("openai:gpt-4o-mini", server, tools=[lookup], store=None)
    steps = agent.steps("Weather in Paris?", max_cost=1.2e-4)
    reply = steps.send_sync(steps.next_request())
    steps.append_round(reply, steps.execute_sync(reply))
    assert steps.next_request() is None  # a second round would leave no room for an answer
    assert steps.stop_reason == "cost_budget" and server.count == 1
    final = steps.next_request(forced="cost_budget")  # what the loop sends: tools forbidden
    assert final is not None and final.tool_choice == "none" and final.max_output_tokens
    result = steps.finish()
    assert result.stop_reason == "cost_budget"
    assert "lookup: sunny in Paris" in result.output
