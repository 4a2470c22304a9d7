"""The step-by-step API: a caller drives the rounds with the loop's own pieces."""

from __future__ import annotations

from typing import Any

import pytest

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


def test_a_steps_run_writes_its_history_and_holds_the_agents_turn(history_db) -> None:
    from nbagent import ConfigError
    from nbagent.store import Store
    from tests.support.history import query

    agent = Agent(ScriptedModel(forecaster), tools=[get_weather])
    steps = agent.steps("Weather in Oslo and Rome?")
    with pytest.raises(ConfigError, match="already running"):
        agent.run_sync("Meanwhile?")  # one turn at a time, as for agent.run
    first = steps.send_sync(steps.next_request())  # type: ignore[arg-type]
    steps.append_round(first, steps.execute_sync(first))
    # The finished round is saved before the run ends (a crash would keep it).
    assert query(history_db, "SELECT COUNT(*) FROM rounds") == [(1,)]
    final = steps.send_sync(steps.next_request())  # type: ignore[arg-type]
    result = steps.finish(final)

    assert result.output == "Oslo and Rome are sunny."
    loaded = Store(history_db).load(agent.conversation.id)  # reopened, as after a restart
    assert loaded.to_dict() == agent.conversation.to_dict()
    assert query(history_db, "SELECT stop_reason FROM messages WHERE role = 'assistant'") == [
        ("complete",)
    ]
    assert agent.run_sync("Thanks!").stop_reason == "complete"  # finish released the turn


async def test_a_steps_run_validates_its_typed_output_and_sends_the_prompts_images() -> None:
    from pydantic import BaseModel

    from nbagent.messages import Image

    class Forecast(BaseModel):
        city: str
        sky: str

    model = ScriptedModel(lambda request: reply('{"city": "Oslo", "sky": "sunny"}'))
    agent = Agent(model, tools=[], store=None)
    picture = Image(b"\x89PNG fake bytes", "image/png", 4, 3)  # passed through as given
    steps = agent.steps("Forecast?", output_type=Forecast, attachments=[picture])
    result = steps.finish(await steps.send(steps.next_request()))  # type: ignore[arg-type]

    assert result.output == Forecast(city="Oslo", sky="sunny")
    assert result.text == '{"city": "Oslo", "sky": "sunny"}'
    assert model.requests[0].messages[0].images == [picture]
    assert agent.settings.output_type is None  # for that run only


async def test_an_answer_that_never_matches_the_output_type_stops_a_steps_run() -> None:
    agent = Agent(ScriptedModel(lambda request: reply("not json")), tools=[], store=None)
    steps = agent.steps("Number?", output_type=int)
    result = steps.finish(await steps.send(steps.next_request()))  # type: ignore[arg-type]
    assert result.stop_reason == "output_invalid" and result.output is None
    assert result.text == "not json"
