"""``propose_cell``: code in a new cell below, for the user to review and run."""

from __future__ import annotations

from .namespace import KernelView

__all__ = ["propose_text"]


def _in_a_cell(view: KernelView) -> bool:
    """True while the kernel runs a cell (an execute request whose reply carries payloads)."""
    header = getattr(view.shell, "parent_header", None) or {}
    kind = (header.get("header") or {}).get("msg_type")
    return kind in (None, "execute_request")


def propose_text(view: KernelView, code: str) -> str:
    """Place ``code`` in the next cell (never runs it); says where it went, or that it could not."""
    if not code.strip():
        return "Nothing proposed: the code is empty."
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
