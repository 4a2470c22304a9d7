"""Tools: ``@tool`` and the registry, schemas, approval and round execution.

- :mod:`.tool`: the :class:`Tool` class, ``@tool`` and the kernel-wide ``REGISTRY``
- :mod:`.schema`: JSON schemas from signatures and docstrings; argument validation
- :mod:`.approval`: approvers and the ``NBAGENT_APPROVAL`` policy
- :mod:`.execution`: running one round's calls under timeouts and the output budget
- :mod:`.middleware`: ``tool_middleware`` wrappers, :func:`cache`, :func:`rate_limit`
- :mod:`.progress` / :mod:`.retry`: progress lines from tools; retries with backoff
- :mod:`.sources`: :class:`ToolSource` (MCP servers, the kernel toolset, your own) and
  the one precedence and collision rule for a run's tools
"""

from __future__ import annotations

from .approval import Approver, Decision, policy_approver
from .execution import (
    DEFAULT_TOOL_TIMEOUT,
    MIN_CALL_CHARS,
    PER_CALL_CHARS,
    PER_ROUND_CHARS,
    execute_round,
)
from .middleware import Middleware, cache, rate_limit, wrap_call
from .progress import progress
from .sources import ToolItem, ToolSource, as_tools, gather_tools
from .tool import REGISTRY, Tool, ToolRegistry, tool

__all__ = [
    "DEFAULT_TOOL_TIMEOUT",
    "MIN_CALL_CHARS",
    "PER_CALL_CHARS",
    "PER_ROUND_CHARS",
    "REGISTRY",
    "Approver",
    "Decision",
    "Middleware",
    "Tool",
    "ToolItem",
    "ToolRegistry",
    "ToolSource",
    "as_tools",
    "cache",
    "execute_round",
    "gather_tools",
    "policy_approver",
    "progress",
    "rate_limit",
    "tool",
    "wrap_call",
]
