"""Approvals during a live run: the one bridge to the sink, and the stdin question.

The agent's loop asks its approver from the run's event loop; the question must
be asked where the surface lives (the cell's thread for ``input()``, the kernel's
loop for widget buttons). :func:`approval_bridge` is the approver the driver
installs: it posts an :class:`ApprovalRequest` into the same stream as the run's
events, so the consumer sees it after every event before it, asks the sink, and
answers the request's future.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..kernel.display import code_of, fingerprint, refusal
from ..messages import ToolCall
from ..render.arguments import APPROVAL_LIMIT, approval_signature
from ..tools import Decision, Tool, policy_approver

__all__ = ["ApprovalRequest", "approval_bridge", "ask_on_stdin"]


@dataclass
class ApprovalRequest:
    """A call waiting for the user; the driver's consumer answers ``answer``."""

    call: ToolCall
    tool: Tool
    answer: concurrent.futures.Future[Decision] = field(default_factory=concurrent.futures.Future)
    """Resolved by the consumer; cancelled when the run stops waiting (Stop, Ctrl-C)."""

    def decide(self, decision: Decision) -> None:
        """Answer, unless the run already stopped waiting."""
        try:
            self.answer.set_result(decision)
        except concurrent.futures.InvalidStateError:
            pass  # the run was cancelled while we asked; nobody waits for the answer

    def fail(self, error: BaseException) -> None:
        """The sink failed to ask: the call is denied by a failing approver."""
        try:
            self.answer.set_exception(error)
        except concurrent.futures.InvalidStateError:
            pass


def approval_bridge(
    post: Callable[[ApprovalRequest], Awaitable[Any]],
) -> Callable[[ToolCall, Tool], Awaitable[Decision]]:
    """An approver that posts each question with ``post`` and waits for its answer."""

    async def ask_the_surface(call: ToolCall, tool: Tool) -> Decision:
        refused = refusal_reason(call)
        if refused is not None:  # it cannot be shown whole: the user is not asked
            return False, refused
        request = ApprovalRequest(call, tool)
        # The run's events before this call (its text, "Using ...") may still sit in the
        # run's own queue: one turn of the event loop lets the driver's pump move them
        # into its stream first, so the question comes after them, not before.
        await asyncio.sleep(0)
        await post(request)
        return await asyncio.wrap_future(request.answer)

    return ask_the_surface


def refusal_reason(call: ToolCall) -> str | None:
    """Why ``call`` is refused unasked: its code or arguments are too long to show whole."""
    refused = refusal(call)
    if refused is None and code_of(call) is None and approval_signature(call) is None:
        refused = (
            f"nbagent, unasked: its arguments are longer than the {APPROVAL_LIMIT:,} "
            "characters an approval question shows whole"
        )
    return refused


def approval_question(call: ToolCall) -> str:
    """The y/N question: the whole call, or the code's length and hash (shown above it)."""
    code = code_of(call)
    if code is not None:
        shown = f"<the code shown above: {fingerprint(code)}>"
        return f"nbagent: allow {call.name}(code={shown})? [y/N] "
    signature = approval_signature(call)
    if signature is None:  # refused before asking; kept total for direct callers
        signature = f"{call.name}(…)"
    return f"nbagent: allow {signature}? [y/N] "


def ask_on_stdin(call: ToolCall, tool: Tool) -> tuple[bool, str]:
    """Ask through ``input()``; without stdin the ``NBAGENT_APPROVAL`` policy decides.

    ``y``/``yes`` approves, anything else denies. KeyboardInterrupt propagates (the
    driver denies the call and cancels the run). A call too long to show whole is
    refused without asking.
    """
    refused = refusal_reason(call)
    if refused is not None:
        return False, refused
    question = approval_question(call)
    try:
        answer = input(question)
    except (NotImplementedError, EOFError, OSError):  # IPython's StdinNotImplementedError
        approved, who = policy_approver()(call, tool)
        return approved, f"{who} (no stdin)"
    return answer.strip().lower() in ("y", "yes"), "user"
