"""Deciding ``requires_approval`` calls: the approver type and the headless policy.

An approver is any function ``(call, tool) -> decision`` (or async) where the
decision is True/False or ``(decision, who decided)``. Without one, the
non-interactive policy decides: ``NBAGENT_APPROVAL=deny`` (default), ``allow``,
or ``allow:name1,name2``.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from .._internal.threads import in_thread
from ..messages import ToolCall

if TYPE_CHECKING:
    from .tool import Tool

Decision: TypeAlias = "bool | tuple[bool, str]"
Approver = Callable[[ToolCall, "Tool"], "Decision | Awaitable[Decision]"]
"""Decides a ``requires_approval`` call: True/False, or (decision, who decided)."""


def policy_approver(env: Mapping[str, str] | None = None) -> Callable[[Any, Any], tuple[bool, str]]:
    """An approver that decides from ``NBAGENT_APPROVAL`` without asking anyone."""
    env = os.environ if env is None else env
    policy = env.get("NBAGENT_APPROVAL", "deny").strip()

    def decide(call: Any, tool: Any) -> tuple[bool, str]:
        who = f"policy NBAGENT_APPROVAL={policy}"
        if policy == "allow":
            return True, who
        if policy.startswith("allow:"):
            allowed = {n.strip() for n in policy[len("allow:") :].split(",") if n.strip()}
            return call.name in allowed, who
        return False, who

    return decide


async def ask(approver: Approver | None, call: ToolCall, tool: Tool) -> tuple[bool, str]:
    """The decision on ``call`` and who took it (the policy when ``approver`` is None).

    A sync approver is user code: it runs on a worker thread (never on the event
    loop), so one that blocks holds up only this call, which the run's deadline and
    cancellation still end.
    """
    if approver is None:
        decision: Any = policy_approver()(call, tool)
    elif inspect.iscoroutinefunction(approver):
        decision = approver(call, tool)
    else:
        decision = (await in_thread(_decide, approver, call, tool)[0])[1]
        if isinstance(decision, ApproverFailed):
            raise decision
    if inspect.isawaitable(decision):
        decision = await decision
    if isinstance(decision, tuple):
        return bool(decision[0]), str(decision[1])
    return bool(decision), "approver"


class ApproverFailed(Exception):
    """A sync approver raised (any BaseException); the text says what it raised."""


def _decide(approver: Approver, call: ToolCall, tool: Tool) -> Any:
    """Call a sync approver and read its decision (on a worker thread: bool() is user code)."""
    try:
        decision = approver(call, tool)
        if isinstance(decision, tuple):
            return bool(decision[0]), str(decision[1])
        if inspect.isawaitable(decision):
            return decision
        return bool(decision)
    except BaseException as exc:
        try:
            return ApproverFailed(f"{type(exc).__name__}: {exc}")
        except BaseException:
            return ApproverFailed(type(exc).__name__)
