"""Tool sources: a user's own ToolSource, the kernel toolset as a source, and the one
precedence and collision rule, seen in what the model is offered and what runs."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

import nbagent
from nbagent import Agent, ConfigError
from nbagent.kernel import KERNEL_TOOL_NAMES, KernelTools
from nbagent.testing import ScriptedModel, call, reply
from nbagent.tools import Tool, ToolSource
from tests.support.registry import empty_registry


class Units(ToolSource):
    """A user's own source: two tools, a line for the system message, a resource to close."""

    def __init__(self, *, guarded: bool = False) -> None:
        self.closed = 0

        def convert(value: float, unit: str) -> str:
            """Convert a value to SI units."""
            return f"{value * 1000:g} m" if unit == "km" else f"{value:g} {unit}"

        def run_python(code: str) -> str:
            """Run code somewhere else."""
            return "ran elsewhere"

        self.tools = [
            Tool(convert),
            Tool(run_python, requires_approval=guarded),
        ]

    @property
    def origin(self) -> str:
        return "the units source"

    def get_tools(self) -> Sequence[Tool]:
        return self.tools

    def run_context(self) -> str:
        return "Lengths are in metres."

    async def aclose(self) -> None:
        self.closed += 1


@pytest.fixture
def registry():
    with empty_registry() as emptied:
        yield emptied


def script(request):
    if not request.tool_results:
        return reply(calls=[call("convert", value=2, unit="km")])
    return reply(f"It is {request.tool_results[-1].content}.")


def test_a_users_source_offers_its_tools_adds_context_and_is_closed():
    units = Units()
    model = ScriptedModel(script)
    agent = Agent(model, tools=[units], store=None, system="Be brief.")
    result = agent.run_sync("2 km?")
    assert result.output == "It is 2000 m."
    assert model.requests[0].tools == ["convert", "run_python"]
    assert model.requests[0].request.system == "Be brief.\n\nLengths are in metres."
    agent.close()
    assert units.closed == 1


def test_a_source_tool_named_like_a_kernel_tool_is_refused_with_kernel_true():
    with pytest.raises(ConfigError) as refused:
        Agent(ScriptedModel(script), tools=[Units()], kernel=True, store=None)
    text = str(refused.value)
    assert "'run_python' is offered by the kernel tools and by the units source" in text
    # Also when the kernel tools are given as a source in the list, in either order.
    with pytest.raises(ConfigError, match="by the units source and by the kernel tools"):
        Agent(ScriptedModel(script), tools=[Units(), KernelTools(namespace={})], store=None)


def test_two_plain_tools_of_one_name_are_refused(registry):
    def lookup(key: str) -> str:
        """One lookup."""
        return key

    other = Tool(lambda key: key.upper(), name="lookup", description="Another lookup.")
    with pytest.raises(ConfigError, match="two different tools are named 'lookup'"):
        Agent(ScriptedModel(script), tools=[lookup, other], store=None)
    agent = Agent(ScriptedModel(script), tools=[lookup], store=None)
    with pytest.raises(ConfigError, match="two different tools are named 'lookup'"):
        agent.tools = [lookup, other]
    assert list(agent.tools) == ["lookup"]  # the refused list changed nothing


def test_your_tool_replaces_a_kernel_tool_only_if_it_asks_approval_too(registry):
    namespace: dict[str, object] = {}

    @nbagent.tool
    def run_python(code: str) -> str:
        """My own runner, unguarded."""
        return "mine"

    model = ScriptedModel(lambda request: reply("done"))
    with pytest.raises(ConfigError, match="your tool 'run_python' would replace the one from"):
        Agent(model, tools=[run_python, KernelTools(namespace=namespace)], store=None)

    # tools=None: the registry is read at each run, so the clash is found before the request.
    agent = Agent(model, store=None)
    with pytest.raises(ConfigError, match="asks approval before it runs"):
        agent.run_sync("go", kernel=True)
    assert model.requests == []

    guarded = nbagent.tool(run_python, requires_approval=True)
    agent.run_sync("go", kernel=True)
    offered = model.requests[-1].tools
    assert sorted(offered) == sorted(KERNEL_TOOL_NAMES)  # one run_python: yours
    assert agent.tools["run_python"] is guarded


def test_the_same_source_given_twice_is_one_source():
    units = Units()
    agent = Agent(ScriptedModel(script), tools=[units, units], store=None)
    assert list(agent.tools) == ["convert", "run_python"]


def test_tools_none_still_means_every_tool_in_the_kernel_at_each_run(registry):
    model = ScriptedModel(lambda request: reply("done"))
    agent = Agent(model, store=None)
    agent.run_sync("first")

    @nbagent.tool
    def later() -> str:
        """Defined after the agent."""
        return "later"

    agent.run_sync("second")
    assert [r.tools for r in model.requests] == [[], ["later"]]
