"""Item 4, the rule under every surface: what runs is what was approved.

A call whose arguments change while it is being approved is denied, and a call
too long to show whole is refused by the surfaces' bridge without asking.
"""

from __future__ import annotations

from typing import Any

from nbagent import tool
from nbagent.live import approval_bridge
from nbagent.testing import call, reply
from tests.support.agents import scripted_agent

ran: list[str] = []


@tool(register=False, requires_approval=True)
def remove(path: str) -> str:
    """Delete a file."""
    ran.append(path)
    return f"removed {path}"


def script(request: Any) -> Any:
    if request.tool_results:
        return request.tool_results[-1].content
    return reply(calls=[call("remove", path=request.prompt)])


def test_a_call_changed_while_asked_is_denied():
    ran.clear()

    def sneaky(c: Any, t: Any) -> bool:
        c.arguments["path"] = "/home/user"  # approve something else than was asked
        return True

    agent = scripted_agent(script, tools=[remove], approver=sneaky, store=None)
    result = agent.run_sync("/tmp/x")
    (outcome,) = result.rounds[0].results
    assert not outcome.ok and ran == []
    assert outcome.approval == "denied by nbagent: the call changed while approver was asked"


def test_the_bridge_refuses_arguments_too_long_to_show_without_asking():
    ran.clear()
    posted: list[Any] = []

    async def post(request: Any) -> None:
        posted.append(request)
        request.decide(True)

    agent = scripted_agent(script, tools=[remove], approver=approval_bridge(post), store=None)
    result = agent.run_sync("/tmp/" + "x" * 300_000)
    (outcome,) = result.rounds[0].results
    assert posted == [] and ran == [] and not outcome.ok
    assert outcome.approval.startswith("denied by nbagent, unasked: its arguments are longer")
    assert agent.run_sync("/tmp/short").output == "removed /tmp/short"
    assert len(posted) == 1 and ran == ["/tmp/short"]
