"""The exception tree.

NbAgentError
 ├── ConfigError      the caller's mistake (bad model string, missing key); magics show UsageError
 ├── ProviderError    the model API failed after retries; names provider, status and message
 ├── ToolError        a tool failed and the agent runs with ``strict=True``
 └── ReplayMissError  a replayed run asked for a request that was never recorded
"""

from __future__ import annotations

from ._internal.safe_text import clean


class NbAgentError(Exception):
    """Base class of every error nbagent raises on purpose."""


class ConfigError(NbAgentError):
    """The caller asked for something that cannot work as configured."""


class ProviderError(NbAgentError):
    """A model API call failed.

    The message is the provider's own, prefixed with provider and status; it never
    contains an API key, and its control and bidi characters (a server's ANSI
    escapes) show as U+FFFD: it ends up on terminals.
    """

    def __init__(
        self,
        provider: str,
        status: int | None,
        error_type: str | None,
        message: str,
        *,
        retryable: bool = False,
    ) -> None:
        error_type = clean(error_type) if error_type else error_type
        message = clean(message)
        self.provider = provider
        self.status = status
        self.error_type = error_type
        self.message = message
        self.retryable = retryable
        where = f"{provider} HTTP {status}" if status else provider
        kind = f" {error_type}" if error_type else ""
        super().__init__(f"{where}{kind}: {message}")


class ToolError(NbAgentError):
    """A tool call failed while the agent runs with ``strict=True``."""

    def __init__(self, tool_name: str, message: str) -> None:
        self.tool_name = tool_name
        super().__init__(clean(f"tool {tool_name!r} failed: {message}"))


class ReplayMissError(NbAgentError):
    """A replayed run made a request that the recording does not hold."""
