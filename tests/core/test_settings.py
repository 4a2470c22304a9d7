"""Run settings: typed keywords on Agent and on every run, typos named, one meaning per name."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from typing import Any

import pytest

from nbagent import Agent, ConfigError, Conversation, ProviderError
from nbagent.run.settings import RUN_ONLY, RunOptions, RunSettings
from nbagent.store import Store
from nbagent.testing import ScriptedModel, call, reply
from tests.support.agents import http_agent
from tests.support.history import query
from tests.support.servers import OpenAI, WireServer

from .helpers import assert_history_valid


def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def always_calls(request: Any) -> Any:
    """A model that asks for the tool whenever it may, and answers when it may not."""
    if request.tool_choice == "none":
        return reply("Final from what I have.")
    return reply("", [call("lookup", city="Oslo")])


def settings_names() -> set[str]:
    return {f.name for f in dataclasses.fields(RunSettings)}


def test_every_setting_is_a_typed_agent_keyword_and_a_typed_run_keyword() -> None:
    agent_keywords = inspect.signature(Agent.__init__).parameters
    missing = settings_names() - set(agent_keywords)
    assert not missing, f"Agent() lacks {missing}"
    run_keywords = set(RunOptions.__annotations__)
    assert run_keywords == settings_names() | RUN_ONLY


def test_settings_are_the_agents_defaults_and_frozen() -> None:
    agent = Agent(
        ScriptedModel(), store=None, max_rounds=4, text_tool_calls=False, context_window=8000,
        max_tool_only_rounds=2, tool_middleware=[], status_model=None,
    )  # fmt: skip
    assert agent.settings.max_rounds == 4
    assert agent.settings.text_tool_calls is False  # once fished out of **provider_options
    assert agent.settings.context_window == 8000
    assert agent.settings.max_tool_only_rounds == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        agent.settings.max_rounds = 5  # type: ignore[misc]
    agent.settings = agent.settings.replace(max_rounds=5)
    assert agent.settings.max_rounds == 5


def test_a_misspelt_run_keyword_names_the_nearest() -> None:
    agent = Agent(ScriptedModel(), store=None)
    with pytest.raises(TypeError, match="'max_round'.*did you mean 'max_rounds'"):
        agent.run_sync("Hi", max_round=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="did you mean 'timeout'"):
        agent.stream("Hi", timout=2)  # type: ignore[call-arg]
    assert agent.conversation.messages == []  # nothing was run, nothing was lost
    assert agent.run_sync("Hi").stop_reason == "complete"  # and the agent is not left busy


def test_a_misspelt_agent_keyword_names_the_nearest() -> None:
    with pytest.raises(TypeError, match="'max_round'.*did you mean 'max_rounds'"):
        Agent(ScriptedModel(), store=None, max_round=2)
    with pytest.raises(TypeError, match="did you mean 'tool_timeout'"):
        Agent(ScriptedModel(), store=None, tool_timeot=2)


def test_out_of_range_settings_are_refused_with_their_name() -> None:
    with pytest.raises(ValueError, match="max_rounds must be 0 or more"):
        Agent(ScriptedModel(), store=None, max_rounds=-1)
    agent = Agent(ScriptedModel(), store=None)
    with pytest.raises(ValueError, match="timeout must be a positive number of seconds"):
        agent.run_sync("Hi", timeout=0)


def test_a_per_run_override_holds_for_that_run_only() -> None:
    model = ScriptedModel(always_calls)
    agent = Agent(model, tools=[lookup], store=None, max_rounds=3)
    short = agent.run_sync("Weather?", max_rounds=1)
    assert short.stop_reason == "max_rounds" and len(short.rounds) == 1
    assert agent.settings.max_rounds == 3
    longer = agent.run_sync("Again?")
    assert longer.stop_reason == "max_rounds" and len(longer.rounds) == 3


def test_images_is_the_old_name_of_send_images() -> None:
    with pytest.warns(DeprecationWarning, match="send_images"):
        agent = Agent(ScriptedModel(), store=None, images=False)
    assert agent.settings.send_images is False


def test_http_timeout_reaches_the_providers_requests_and_timeout_stays_the_run_deadline(
    wire_server: WireServer,
) -> None:
    stalled = OpenAI.text_reply("late")
    stalled.first_byte_delay = 2.0
    wire_server.add(stalled)
    agent = http_agent(
        "openai:gpt-test", wire_server, store=None, http_timeout=0.2, max_retries=0, timeout=60
    )
    assert agent.settings.timeout == 60  # the run's deadline, untouched
    with pytest.raises(ProviderError, match="timeout|timed out"):
        agent.run_sync("Hi")
    assert agent.last_result is not None and agent.last_result.stop_reason == "error"


async def test_a_run_on_another_conversation_leaves_the_agents_own_alone(history_db) -> None:
    agent = Agent(ScriptedModel(always_calls), tools=[lookup], max_rounds=1)
    mine = Conversation(system="Be brief.")
    result = await agent.run("Weather in Oslo?", conversation=mine)

    assert result.conversation_id == mine.id
    assert [m.role for m in mine.messages] == ["user", "assistant"]
    assert_history_valid(mine)
    assert agent.conversation.messages == [] and agent.last_result is None
    # The history holds the run under that conversation's id, after reopening the file.
    assert Store(history_db).load(mine.id).to_dict() == mine.to_dict()
    assert query(history_db, "SELECT COUNT(*) FROM conversations WHERE id = ?", mine.id) == [(1,)]


async def test_runs_on_different_conversations_run_together_one_turn_per_conversation(
    history_db,
) -> None:
    started = asyncio.Event()

    async def slow(request: Any) -> Any:
        started.set()
        await asyncio.sleep(0.05)
        return reply("done")

    agent = Agent(ScriptedModel(slow), tools=[])
    first, second = Conversation(), Conversation()
    both = asyncio.gather(
        agent.run("One", conversation=first), agent.run("Two", conversation=second)
    )
    await started.wait()
    with pytest.raises(ConfigError, match="one turn at a time per conversation"):
        await agent.run("Again", conversation=first)
    one, two = await both
    assert (one.output, two.output) == ("done", "done")
    assert [m.content for m in first.messages] == ["One", "done"]
    assert [m.content for m in second.messages] == ["Two", "done"]
    # The agent's own conversation is free all along.
    assert (await agent.run("Mine")).output == "done"
    # Each run's history went to its own conversation.
    store = Store(history_db)
    for conversation in (first, second, agent.conversation):
        assert store.load(conversation.id).to_dict() == conversation.to_dict()
