"""What a surface implements to show a live run: four methods, no threads, no event loops.

The live driver (:class:`~nbagent.live.LiveRun`) owns everything else: running the
agent, feeding the :class:`~nbagent.render.Transcript`, throttling redraws,
bridging approvals, Ctrl-C and Stop. Adding a surface means writing one sink.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Protocol

from ..results import stop_reason_words

if TYPE_CHECKING:
    from ..messages import ToolCall
    from ..render import Transcript
    from ..results import RunResult
    from ..tools import Decision, Tool

__all__ = ["Sink", "stop_text"]


class Sink(Protocol):
    """A surface showing one run. Every method is called in the driver's consumer.

    From sync code (``LiveRun.run``) that is the caller's thread, so ``input()`` and
    Ctrl-C behave as in any cell; from async code (``LiveRun.run_async``) it is the
    caller's event loop, so a sink may touch widgets directly.
    """

    interval: float
    """Seconds between redraws (``UPDATE_INTERVAL``); 0 redraws after every change."""

    def start(self, transcript: Transcript) -> None:
        """The run is about to start: show the (empty) transcript."""

    def update(self, transcript: Transcript) -> None:
        """Redraw: the transcript changed (throttled to one call per ``interval``)."""

    def ask(self, call: ToolCall, tool: Tool) -> Decision | Awaitable[Decision]:
        """Ask the user whether ``call`` may run: True/False or (decision, who decided).

        Called after the update showing every event before the call. May be async
        (the ChatWidget waits for a button); a KeyboardInterrupt raised here (Ctrl-C
        at an ``input()`` prompt) denies the call and cancels the run.
        """

    def finish(self, transcript: Transcript, *, error: BaseException | None) -> None:
        """The run is over (``transcript.result``, ``transcript.interrupted``).

        Called after a last, unthrottled update. ``error`` is what the run raised, if
        it failed (the driver raises it again once the sink has shown it).
        """


def stop_text(result: RunResult) -> str:
    """A one-line status for how a run ended: ``Ready`` or ``Stopped: max rounds``."""
    if result.stop_reason == "complete":
        return "Ready"
    return f"Stopped: {stop_reason_words(result.stop_reason)}"
