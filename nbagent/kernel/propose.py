"""``propose_cell``: code in a new cell below, for the user to review and run.

Inside a running cell the code goes out as IPython's ``set_next_input`` payload. A
run that no cell started (the chat widget's) has no such payload: its surface puts
a *cell inserter* in :data:`CELL_INSERTER` for the run, and the tool hands the code
to it on the kernel's main thread.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable

from .._internal.threads import call_on_main_thread
from .namespace import KernelView

__all__ = ["CELL_INSERTER", "propose_text"]

CELL_INSERTER: contextvars.ContextVar[Callable[[str], str] | None] = contextvars.ContextVar(
    "nbagent_cell_inserter", default=None
)
"""Set by a surface for the runs it starts: adds a cell holding the code (never runs it)
and returns the sentence the model gets. Called on the kernel's main thread."""

INSERT_TIMEOUT = 20.0
"""Seconds the tool waits for the main thread to hand the code to the front end."""


def _in_a_cell(view: KernelView) -> bool:
    """True while the kernel runs a cell (an execute request whose reply carries payloads)."""
    header = getattr(view.shell, "parent_header", None) or {}
    kind = (header.get("header") or {}).get("msg_type")
    return kind in (None, "execute_request")


def propose_text(view: KernelView, code: str) -> str:
    """Place ``code`` in the next cell (never runs it); says where it went, or that it could not."""
    if not code.strip():
        return "Nothing proposed: the code is empty."
    insert = CELL_INSERTER.get()
    if insert is not None:  # a chat's run: the chat's front end adds the cell
        return str(call_on_main_thread(lambda: insert(code), INSERT_TIMEOUT))
    shell = view.shell
    if shell is None or not hasattr(shell, "set_next_input"):
        return (
            "Not proposed: there is no notebook front end here (plain Python). "
            "Show the code to the user in your answer instead; it was not run."
        )
    if view.in_kernel and not _in_a_cell(view):
        return (
            "Not proposed: this run does not come from a notebook cell, so no cell can be "
            "added. Show the code to the user in your answer instead; it was not run."
        )
    shell.set_next_input(code, replace=False)
    if view.in_kernel:
        return (
            "Proposed: when this cell finishes, the notebook shows the code in a new cell "
            "below for the user to review and run. It was not run."
        )
    return "Proposed: the code is in the next input prompt for the user to review. It was not run."
