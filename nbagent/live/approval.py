"""Approvals during a live run: the one bridge to the sink, and the stdin question.

The agent's loop asks its approver from the run's event loop; the question must
be asked where the surface lives (the cell's thread for ``input()``, the kernel's
loop for widget buttons). :func:`approval_bridge` is the approver the driver
installs: it posts an :class:`ApprovalRequest` into the same stream as the run's
events, so the consumer sees it after every event before it, asks the sink, and
answers the request's future.

Two rules keep a cell from waiting on a question nobody can see:

- a ``NBAGENT_APPROVAL`` policy, once set, decides wherever the run happens (the
  driver then installs no bridge: nobody is asked);
- a question on stdin is withdrawn after ``NBAGENT_APPROVAL_TIMEOUT`` seconds
  (default 120) and counts as a denial: after a page reload JupyterLab no longer
  shows the input box, and the kernel would otherwise stay busy for good.
"""

from __future__ import annotations

import _thread
import asyncio
import concurrent.futures
import os
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..kernel.display import code_of, fingerprint, refusal
from ..messages import ToolCall
from ..render.arguments import APPROVAL_LIMIT, approval_signature
from ..tools import Decision, Tool, policy_approver

__all__ = [
    "DEFAULT_APPROVAL_TIMEOUT",
    "ApprovalRequest",
    "approval_bridge",
    "approval_timeout",
    "ask_on_stdin",
    "policy_is_set",
]

DEFAULT_APPROVAL_TIMEOUT = 120.0
"""Seconds a question on stdin waits for an answer before it counts as a denial."""


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


def approval_question(call: ToolCall, limit: str = "") -> str:
    """The y/N question: the whole call, or the code's length and hash (shown above it).

    ``limit`` joins the answer choices (", no answer in 120 s: N").
    """
    code = code_of(call)
    if code is not None:
        shown = f"<the code shown above: {fingerprint(code)}>"
        return f"nbagent: allow {call.name}(code={shown})? [y/N{limit}] "
    signature = approval_signature(call)
    if signature is None:  # refused before asking; kept total for direct callers
        signature = f"{call.name}(…)"
    return f"nbagent: allow {signature}? [y/N{limit}] "


def policy_is_set(env: Mapping[str, str] | None = None) -> bool:
    """True when ``NBAGENT_APPROVAL`` is set: then it decides, and nobody is asked."""
    env = os.environ if env is None else env
    return bool(env.get("NBAGENT_APPROVAL", "").strip())


def approval_timeout(env: Mapping[str, str] | None = None) -> float:
    """``NBAGENT_APPROVAL_TIMEOUT`` in seconds (default 120; 0 or less: wait for ever)."""
    env = os.environ if env is None else env
    text = env.get("NBAGENT_APPROVAL_TIMEOUT", "").strip()
    try:
        return float(text) if text else DEFAULT_APPROVAL_TIMEOUT
    except ValueError:
        return DEFAULT_APPROVAL_TIMEOUT


def ask_on_stdin(call: ToolCall, tool: Tool) -> tuple[bool, str]:
    """Ask through ``input()``; without stdin the ``NBAGENT_APPROVAL`` policy decides.

    ``y``/``yes`` approves, anything else denies; no answer within
    :func:`approval_timeout` denies too. KeyboardInterrupt propagates (the driver
    denies the call and cancels the run). A call too long to show whole is refused
    without asking.
    """
    if policy_is_set():  # set after the run started (the driver checks at its start)
        return policy_approver()(call, tool)
    refused = refusal_reason(call)
    if refused is not None:
        return False, refused
    timeout = approval_timeout()
    limit = f", no answer in {timeout:g} s: N" if timeout > 0 else ""
    question = approval_question(call, limit)
    alarm = _Alarm(timeout)
    try:
        try:
            answer = input(question)
        finally:
            alarm.cancel()
    except (NotImplementedError, EOFError, OSError):  # IPython's StdinNotImplementedError
        approved, who = policy_approver()(call, tool)
        return approved, f"{who} (no stdin)"
    except KeyboardInterrupt:
        if not alarm.rang:
            raise  # the user's own Ctrl-C or kernel interrupt
        return False, f"nobody (no answer in {timeout:g} s)"
    return answer.strip().lower() in ("y", "yes"), "user"


class _Alarm:
    """Interrupts the main thread's ``input()`` after ``seconds`` (0 or less: never).

    ``input()`` has no timeout, in a kernel or a terminal; a simulated Ctrl-C
    (``_thread.interrupt_main``) is what ends it, and ``rang`` tells that interrupt
    from the user's. Only the main thread can be interrupted: elsewhere there is no alarm.
    """

    def __init__(self, seconds: float) -> None:
        self.rang = False
        self._lock = threading.Lock()
        self._done = False
        self._timer: threading.Timer | None = None
        if seconds > 0 and threading.current_thread() is threading.main_thread():
            self._timer = threading.Timer(seconds, self._ring)
            self._timer.daemon = True
            self._timer.start()

    def _ring(self) -> None:
        with self._lock:
            if self._done:
                return
            self.rang = True
            _thread.interrupt_main()

    def cancel(self) -> None:
        """The question was answered (or failed): the alarm must not ring any more."""
        with self._lock:
            self._done = True
        if self._timer is not None:
            self._timer.cancel()
