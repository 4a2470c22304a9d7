"""Which namespace the kernel tools look at: the IPython shell's, or a plain dict."""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["KernelView", "current_view"]

_IPYTHON_NAMES = frozenset(
    {"In", "Out", "_", "__", "___", "_i", "_ii", "_iii", "_oh", "_ih", "_dh", "exit", "quit",
     "get_ipython", "open", "_exit_code"}
)  # fmt: skip


class KernelView:
    """The user namespace, the shell (None outside IPython) and the names to leave out."""

    def __init__(self, shell: Any = None, namespace: dict[str, Any] | None = None) -> None:
        self.shell = shell
        if namespace is None:
            namespace = shell.user_ns if shell is not None else vars(sys.modules["__main__"])
        self.ns: dict[str, Any] = namespace
        hidden = getattr(shell, "user_ns_hidden", None) or {}
        self.hidden: frozenset[str] = frozenset(hidden) | _IPYTHON_NAMES

    def is_hidden(self, name: str) -> bool:
        """IPython's own names, private names and ``_i3``/``_3`` history entries."""
        if name.startswith("_") or name in self.hidden:
            return True
        return False

    @property
    def in_kernel(self) -> bool:
        """True inside a Jupyter kernel (a front end may show proposed cells)."""
        return self.shell is not None and type(self.shell).__name__ == "ZMQInteractiveShell"


def current_view(shell: Any = None, namespace: dict[str, Any] | None = None) -> KernelView:
    """The running IPython shell's view (or ``__main__``'s namespace outside IPython)."""
    if shell is None and namespace is None and "IPython" in sys.modules:
        from IPython.core.getipython import get_ipython

        shell = get_ipython()  # type: ignore[no-untyped-call, unused-ignore]  # typed from IPython 9
    return KernelView(shell, namespace)
