"""nbagent: let an LLM call your kernel's Python functions and show its work inline.

``import nbagent`` stays light: pandas, IPython, ipywidgets and provider modules
are imported only when used.
"""

from __future__ import annotations

import typing

from ._internal import logs
from .agent import Agent
from .errors import ConfigError, NbAgentError, ProviderError, ToolError
from .events import (
    Event,
    RoundFinished,
    RunFinished,
    RunStarted,
    Status,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolProgress,
)
from .messages import Conversation, Message, ToolCall, ToolResult, ToolRound, ToolSpec, Usage
from .results import RunResult, StopReason
from .run.settings import RunSettings
from .run.steps import ModelReply, Steps
from .tools import REGISTRY, Tool, progress, tool

logs.configure_logging()  # NBAGENT_LOG=debug shows the loop's log on stderr

__version__ = "0.1.0"

__all__ = [
    "REGISTRY",
    "Agent",
    "ConfigError",
    "Conversation",
    "Event",
    "Message",
    "ModelReply",
    "NbAgentError",
    "ProviderError",
    "RoundFinished",
    "RunFinished",
    "RunResult",
    "RunSettings",
    "RunStarted",
    "Status",
    "Steps",
    "StopReason",
    "TextDelta",
    "Tool",
    "ToolCall",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolError",
    "ToolProgress",
    "ToolResult",
    "ToolRound",
    "ToolSpec",
    "Usage",
    "history",
    "kernel_tools",
    "load_ipython_extension",
    "progress",
    "tool",
]


def history(**options: typing.Any) -> typing.Any:
    """Stored conversations as a pandas DataFrame, newest first (see ``nbagent.store.history``).

    ``history(all=True)`` lists every one; ``limit=`` caps the rows (20 by default).
    """
    from .store import history as _history

    return _history(**options)


def kernel_tools(**options: typing.Any) -> typing.Any:
    """The kernel toolset; see :func:`nbagent.kernel.kernel_tools`.

    list_variables, inspect_variable, run_python, last_error and propose_cell.
    """
    from .kernel import kernel_tools as _kernel_tools

    return _kernel_tools(**options)


def load_ipython_extension(ipython: typing.Any) -> None:
    """``%load_ext nbagent``: register ``%%agent`` and ``%agent`` (imports IPython lazily)."""
    from .magic import register

    register(ipython)


def __dir__() -> list[str]:
    return sorted([*globals(), "ChatWidget"])


def __getattr__(name: str) -> typing.Any:
    # ``nbagent.ChatWidget`` imports ipywidgets and anywidget only when first used.
    if name == "ChatWidget":
        from .chat import ChatWidget

        return ChatWidget
    raise AttributeError(f"module 'nbagent' has no attribute {name!r}")
