"""Insert as new cell: code from the chat in a new notebook cell below, never run.

A widget message is not a cell execution, so IPython's ``set_next_input`` payload
(what ``propose_cell`` uses inside a cell) cannot carry it. JupyterLab 4 and
Notebook 7 can: their command registry has ``notebook:insert-cell-below`` and
``notebook:replace-selection``, and the ``ipylab`` widget runs those commands
from the kernel. Its front end says when it is ready; a front end without it
(classic Notebook, VS Code) never does, and the chat says so in one line and
leaves Copy to the user.

The commands act on the notebook and cell the user last clicked in: clicking
Insert in the chat makes the chat's own cell active, so the code lands below it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CellInserter", "cell_inserter"]

UNAVAILABLE = (
    "Insert as cell needs JupyterLab 4 or Notebook 7 with ipylab; this front end cannot "
    "add cells, so copy the code instead."
)
INSERTED = "Inserted the code in a new cell below (not run)."


class CellInserter:
    """The kernel's handle on the front end's notebook commands (one per kernel).

    Args:
        front_end: an ``ipylab.JupyterFrontEnd``, or None where ipylab is not installed.
    """

    def __init__(self, front_end: Any | None) -> None:
        self.front_end = front_end
        self.ready = False
        """True once a front end that runs notebook commands has answered."""
        if front_end is not None:
            front_end.on_ready(self._on_ready)

    def _on_ready(self) -> None:
        self.ready = True

    def insert(self, code: str) -> str:
        """Put ``code`` in a new cell below the active one; the sentence that says how it went.

        Run on the kernel's main thread (it sends widget messages). The cell holds
        exactly ``code`` and is not run.
        """
        if not code.strip():
            return "Nothing inserted: the code is empty."
        if self.front_end is None or not self.ready:
            return UNAVAILABLE
        commands = self.front_end.commands
        commands.execute("notebook:insert-cell-below")
        commands.execute("notebook:replace-selection", {"text": code})
        return INSERTED

    def propose(self, code: str) -> str:
        """What the ``propose_cell`` tool answers the model when a chat run asks for a cell."""
        said = self.insert(code)
        if said == INSERTED:
            return (
                "Proposed: the code is in a new notebook cell below the chat for the user to "
                "review and run. It was not run."
            )
        return f"Not proposed: {said} Show the code to the user in your answer; it was not run."


_INSERTER: CellInserter | None = None


def cell_inserter() -> CellInserter:
    """The kernel's inserter, made with the first chat so its front end is ready by a click.

    Outside a Jupyter kernel, or without ipylab, it can only say that it cannot insert.
    """
    global _INSERTER
    if _INSERTER is None:
        _INSERTER = CellInserter(_front_end())
    return _INSERTER


def _front_end() -> Any | None:
    from IPython.core.getipython import get_ipython

    shell = get_ipython()
    if shell is None or type(shell).__name__ != "ZMQInteractiveShell":
        return None  # no front end to talk to (a script, a terminal IPython, a test)
    try:
        from ipylab import JupyterFrontEnd
    except ImportError:
        return None
    return JupyterFrontEnd()
