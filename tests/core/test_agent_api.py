"""Agent's public configuration API: switching models, per-run tools, the tool selection."""

from __future__ import annotations

import pytest

from nbagent import Agent, ConfigError, tool
from nbagent.testing import ScriptedModel, call, reply


@tool
def double(x: int) -> int:
    """Twice x."""
    return 2 * x


@tool
def negate(x: int) -> int:
    """Minus x."""
    return -x


def test_per_run_tools_replace_the_agents_tools_for_that_run_only():
    model = ScriptedModel(lambda request: reply(f"tools: {','.join(request.tools)}"))
    agent = Agent(model, tools=[double, negate], store=None)

    once = agent.run_sync("which tools?", tools=[negate])
    again = agent.run_sync("and now?")

    assert once.output == "tools: negate"
    assert again.output == "tools: double,negate"
    assert sorted(agent.tools) == ["double", "negate"]


def test_per_run_tools_are_the_ones_the_loop_runs():
    def script(request):
        if not request.tool_results:
            return reply(calls=[call("double", x=4)])
        return reply(f"got {request.tool_results[-1].content}")

    agent = Agent(ScriptedModel(script), tools=[negate], store=None)
    result = agent.run_sync("double 4", tools=[double])
    assert result.output == "got 8"


def test_tool_selection_is_none_for_every_registered_tool_else_the_given_list():
    assert Agent(ScriptedModel(), store=None).tool_selection is None
    chosen = Agent(ScriptedModel(), tools=[double], store=None).tool_selection
    assert [t.name for t in chosen or []] == ["double"]


def test_use_model_keeps_the_conversation_and_switches_the_replies():
    agent = Agent(ScriptedModel(["first answer"]), store=None)
    agent.run_sync("hello")
    second = ScriptedModel(lambda request: reply(f"{len(request.messages)} messages seen"))

    agent.use_model(second)
    result = agent.run_sync("again")

    assert agent.model == "scripted"
    # user, assistant, user and the in-progress assistant turn of this run
    assert result.output == "4 messages seen"
    assert [m.role for m in agent.conversation.messages] == ["user", "assistant"] * 2


def test_use_model_with_a_bad_model_keeps_the_current_one():
    model = ScriptedModel(["still here"])
    agent = Agent(model, store=None)
    with pytest.raises(ConfigError, match="Unknown provider 'nosuch'"):
        agent.use_model("nosuch:model")
    with pytest.raises(ConfigError, match="API key"):
        agent.use_model("anthropic:claude-haiku-4-5")  # the suite has no keys set
    assert agent.provider is model
    assert agent.run_sync("hi").output == "still here"


def test_use_model_with_the_same_provider_changes_nothing():
    model = ScriptedModel()
    agent = Agent(model, store=None)
    agent.use_model(model)
    assert agent.provider is model


def test_run_sync_raises_nbagents_own_errors_short():
    # No key in the environment (the suite's conftest removes them): a ConfigError that
    # says what to do, without the event-loop thread's frames or a chained traceback.
    import traceback

    agent = Agent("openai:gpt-4o-mini", store=None)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY") as info:
        agent.run_sync("Hi")
    text = "".join(traceback.format_exception(info.value))
    assert "_internal/sync.py" not in text and "run/loop.py" not in text
    assert "direct cause" not in text and "During handling" not in text
    assert text.count('File "') == 2, text  # this line, and run_sync's raise
