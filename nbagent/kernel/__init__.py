"""The kernel toolset: the agent sees and uses the notebook's own kernel.

:func:`kernel_tools` returns ordinary nbagent tools (panels, budgets, approval and
history apply to them like to any ``@tool``):

- ``list_variables``: a compact inventory of the user namespace (:mod:`.inventory`)
- ``inspect_variable``: one variable in detail (:mod:`.inspect`)
- ``run_python``: code run in the kernel's main thread, with approval (:mod:`.run_python`)
- ``last_error``: the last exception and the cell that raised it (:mod:`.errors`)
- ``propose_cell``: code in a new cell below, never run (:mod:`.propose`)

:class:`KernelTools` is the same set as a tool source (``tools=[KernelTools(...)]``):
``%%agent --kernel``, ``Agent(kernel=True)`` and ``ChatWidget(kernel=True)`` add one
to the run, which also puts :func:`inventory_text` in the run's system message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._internal.threads import MAIN_THREAD_POSTER, MainThreadJob, call_on_main_thread
from ..tools import Tool, ToolSource
from .errors import last_error_text
from .inspect import inspect_text
from .inventory import INVENTORY_CHARS, inventory
from .namespace import KernelView, current_view
from .propose import propose_text
from .run_python import PythonError, RunPythonOutput, run_code

__all__ = [
    "KERNEL_TOOLS_ORIGIN",
    "KERNEL_TOOL_NAMES",
    "KernelTools",
    "MAIN_THREAD_POSTER",
    "KernelView",
    "MainThreadJob",
    "PythonError",
    "RunPythonOutput",
    "call_on_main_thread",
    "current_view",
    "inventory_text",
    "kernel_context",
    "kernel_tools",
]

KERNEL_TOOL_NAMES = (
    "list_variables",
    "inspect_variable",
    "run_python",
    "last_error",
    "propose_cell",
)
RUN_TIMEOUT = 60.0
KERNEL_TOOLS_ORIGIN = "the kernel tools"
"""How collision errors name this toolset (see :mod:`nbagent.tools.sources`)."""


class KernelTools(ToolSource):
    """The kernel toolset as a tool source; ``kernel=True`` adds ``KernelTools()``.

    Options are :func:`kernel_tools`'s. Each run gets the tools of the kernel it
    runs in, and its system message gets the kernel's variable inventory.
    """

    def __init__(
        self,
        shell: Any = None,
        *,
        namespace: dict[str, Any] | None = None,
        run_timeout: float = RUN_TIMEOUT,
        approval: bool = True,
    ) -> None:
        self.shell = shell
        self.namespace = namespace
        self.run_timeout = run_timeout
        self.approval = approval

    def __repr__(self) -> str:
        return f"KernelTools(run_timeout={self.run_timeout!r}, approval={self.approval!r})"

    @property
    def origin(self) -> str:
        """``the kernel tools``."""
        return KERNEL_TOOLS_ORIGIN

    def get_tools(self) -> Sequence[Tool]:
        """The five kernel tools for the kernel running now (built once per namespace)."""
        return kernel_tools(
            self.shell,
            namespace=self.namespace,
            run_timeout=self.run_timeout,
            approval=self.approval,
        )

    def run_context(self) -> str:
        """The variable inventory the run's system message carries."""
        return kernel_context(current_view(self.shell, self.namespace))


def inventory_text(shell: Any = None, *, namespace: dict[str, Any] | None = None) -> str:
    """The compact inventory ``list_variables`` returns, for the current kernel."""
    return inventory(current_view(shell, namespace))


def kernel_context(view: KernelView | None = None) -> str:
    """The text a ``--kernel`` run adds to its system message."""
    view = view or current_view()
    return (
        "You work inside the user's Jupyter kernel. Its variables now:\n"
        + inventory(view, INVENTORY_CHARS)
        + "\nUse the kernel tools to look closer or run code there."
    )


def kernel_tools(
    shell: Any = None,
    *,
    namespace: dict[str, Any] | None = None,
    run_timeout: float = RUN_TIMEOUT,
    approval: bool = True,
) -> list[Tool]:
    """The kernel tools for ``shell`` (the running IPython shell by default).

    Args:
        shell: the IPython shell; None looks up the running one (outside IPython,
            ``__main__``'s namespace is used).
        namespace: a namespace to use instead of the shell's.
        run_timeout: seconds ``run_python`` may run before it is interrupted.
        approval: False lets ``run_python`` run without asking (it asks by default).
    """
    view = current_view(shell, namespace)
    key = (id(view.shell), id(view.ns), run_timeout, approval)
    cached = _BUILT.get(key)
    if cached is not None and cached[0] is view.shell and cached[1] is view.ns:
        return list(cached[2])  # building the five schemas costs 10-30 ms per run
    tools = _build(view, run_timeout, approval)
    _BUILT[key] = (view.shell, view.ns, tools)  # holding ns keeps its id from being reused
    return list(tools)


_BUILT: dict[tuple[int, int, float, bool], tuple[Any, dict[str, Any], list[Tool]]] = {}
"""The tools built for each (shell, namespace, options): a %%agent --kernel run reuses them."""


def _build(view: KernelView, run_timeout: float, approval: bool) -> list[Tool]:
    def list_variables() -> str:
        """List the variables in the user's Python kernel.

        Name and type; for DataFrames and arrays the shape and column dtypes
        (largest and newest first).
        """
        return inventory(view)

    def inspect_variable(name: str, rows: int = 5) -> str:
        """Look closely at one variable of the user's kernel.

        For a DataFrame: shape, dtypes, null counts, describe() and the first rows;
        else type, length, repr and public attributes.

        Args:
            name: a variable name, optionally with .attribute or [key] steps (df.columns).
            rows: rows of a DataFrame to show.
        """
        return inspect_text(view, name, rows)

    def run_python(code: str) -> RunPythonOutput:
        """Run Python code in the user's kernel, in their namespace, as a cell would.

        The user approves it first. Variables you assign stay defined. Returns
        printed output, the value of the last expression, and figures as images.

        Args:
            code: the Python code to run.
        """
        return run_code(view, code, run_timeout)

    def last_error() -> str:
        """The last exception raised in the user's kernel.

        The cell's source, the exception type and message, and a trimmed traceback.
        """
        return last_error_text(view)

    def propose_cell(code: str) -> str:
        """Put code into a new notebook cell below for the user to review and run.

        The code is never run by this tool.

        Args:
            code: the code for the new cell.
        """
        return propose_text(view, code)

    tools = [
        Tool(list_variables, timeout=30.0),
        Tool(inspect_variable, timeout=30.0),
        Tool(
            run_python,
            timeout=run_timeout + 15.0,
            requires_approval=approval,
            sequential=True,
        ),
        Tool(last_error, timeout=30.0),
        Tool(propose_cell, timeout=30.0),
    ]
    for t in tools:
        t.origin = KERNEL_TOOLS_ORIGIN  # so a clash names them, in any list they are put in
    return tools
