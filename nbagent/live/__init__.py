"""Live runs: one driver for every surface, and the sinks that show a run.

- ``driver``: :class:`LiveRun` runs an agent from sync code (a cell) or async code
  (a widget) and owns throttled redraws, approvals, Ctrl-C and Stop
- ``sink``: the :class:`Sink` protocol a surface implements (start, update, ask,
  finish) and :func:`stop_text`, the one status for how a run ended
- ``throttle``: the one throttle (:data:`UPDATE_INTERVAL`)
- ``approval``: the approval bridge to the sink and the ``input()`` question
- ``cell``: :class:`CellDisplay`, a notebook display updated in place
- ``terminal``: :class:`TerminalPrinter`, progress appended to stdout

The ChatWidget's sink lives with the widget (``nbagent.widget``).
"""

from __future__ import annotations

from .approval import ApprovalRequest, approval_bridge, ask_on_stdin
from .cell import CellDisplay
from .driver import LiveRun
from .sink import Sink, stop_text
from .terminal import TerminalPrinter
from .throttle import UPDATE_INTERVAL, Throttle

__all__ = [
    "UPDATE_INTERVAL",
    "ApprovalRequest",
    "CellDisplay",
    "LiveRun",
    "Sink",
    "TerminalPrinter",
    "Throttle",
    "approval_bridge",
    "ask_on_stdin",
    "stop_text",
]
