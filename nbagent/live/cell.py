"""Sink: one display in a notebook cell, updated in place (``%%agent`` in Jupyter).

IPython-free: the magic hands in its ``display`` function (``display(bundle)``
shows a mime bundle and returns a handle with ``update(bundle, raw=True)``), so
scripts, tests and benchmarks can drive a cell display without the magic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .approval import ask_on_stdin
from .throttle import UPDATE_INTERVAL

if TYPE_CHECKING:
    from ..messages import ToolCall
    from ..render import Transcript
    from ..tools import Tool

__all__ = ["CellDisplay"]


class CellDisplay:
    """Shows the run in one display (HTML with its Markdown and plain-text twins).

    The first display says "Starting…"; later redraws replace it in place, at most
    every ``interval`` seconds; the last one is the run's static final rendering.
    Approval questions go through ``input()`` (the cell's stdin).
    """

    def __init__(
        self, display: Callable[[dict[str, str]], Any], *, interval: float = UPDATE_INTERVAL
    ) -> None:
        self.display = display
        self.interval = interval
        self.handle: Any = None

    def start(self, transcript: Transcript) -> None:
        """Show the first display."""
        transcript.status = "Starting…"
        self.handle = self.display(transcript.bundle())

    def update(self, transcript: Transcript) -> None:
        """Replace the display's content."""
        self.handle.update(transcript.bundle(), raw=True)

    def ask(self, call: ToolCall, tool: Tool) -> tuple[bool, str]:
        """Ask through ``input()`` (the policy decides without stdin).

        The code of a ``run_python`` call is shown first, highlighted.
        """
        from ..kernel.display import approval_bundle, code_of

        code = code_of(call)
        if code is not None:
            self.display(approval_bundle(code))
        return ask_on_stdin(call, tool)

    def finish(self, transcript: Transcript, *, error: BaseException | None) -> None:
        """Nothing more: the driver's last update already shows the final rendering."""
