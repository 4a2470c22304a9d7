"""The step-by-step API: a caller drives the rounds with the loop's own pieces."""

from __future__ import annotations

from typing import Any

from nbagent import Agent
from nbagent.testing import ScriptedModel, call, reply

from .helpers import assert_history_valid


def get_weather(city: str) -> str:
    """Weather of a city."""
    return f"sunny in {city}"


def forecaster(request: Any) -> Any:
    if not request.tool_results:
        return reply(
            "Checking.", [call("get_weather", city="Oslo"), call("get_weather", city="Rome")]
        )
    return reply("Oslo and Rome are sunny.")


async def test_driving_rounds_by_hand_gives_what_run_gives() -> None:
    agent = Agent(ScriptedModel(forecaster), tools=[get_weather], store=None)
    steps = agent.steps("Weather in Oslo and Rome?")
    texts: list[str] = []
    while True:
        request = steps.next_request()
        assert request is not None
        reply_ = await steps.send(request, on_event=lambda e: texts.append(type(e).__name__))
        if not reply_.requires_tool_execution:
            break
        assert [c.arguments["city"] for c in reply_.calls] == ["Oslo", "Rome"]
        results = await steps.execute(reply_)
        steps.append_round(reply_, results)
    result = steps.finish(reply_)

    assert result.output == "Oslo and Rome are sunny."
    assert result.stop_reason == "complete"
    assert [r.content for r in result.rounds[0].results] == ["sunny in Oslo", "sunny in Rome"]
    assert "TextChunk" in texts and "Finished" in texts
    assert agent.last_result is result
    assert_history_valid(agent.conversation)

    automatic = Agent(ScriptedModel(forecaster), tools=[get_weather], store=None)
    same = automatic.run_sync("Weather in Oslo and Rome?")
    assert same.output == result.output
    assert [m.role for m in automatic.conversation.messages] == [
        m.role for m in agent.conversation.messages
    ]


async def test_skipping_a_call_and_asking_for_the_final_answer() -> None:
    model = ScriptedModel(forecaster)
    agent = Agent(model, tools=[get_weather], store=None)
    steps = agent.steps("Weather?")
    first = await steps.send(steps.next_request())  # type: ignore[arg-type]
    results = await steps.execute(first)
    steps.append_round(first, results[:1])  # keep only Oslo's: Rome's becomes "not run"
    assert [r.ok for r in steps.rounds[0].results] == [True, False]
    final_request = steps.next_request(final=True)
    assert final_request is not None and final_request.tool_choice == "none"
    final = await steps.send(final_request)
    result = steps.finish(final, stop_reason="max_rounds")
    assert result.stop_reason == "max_rounds"
    assert model.requests[-1].final_instruction
    assert_history_valid(agent.conversation)


async def test_the_budget_holds_for_hand_driven_rounds_too() -> None:
    agent = Agent(ScriptedModel(forecaster), tools=[get_weather], store=None,
                  max_total_tokens=10)  # fmt: skip
    steps = agent.steps("Weather? " * 50)
    assert steps.next_request() is None  # it would pass the budget: nothing to send
