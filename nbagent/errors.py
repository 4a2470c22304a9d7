"""The exception tree.

NbAgentError
 ├── ConfigError      the caller's mistake (bad model string, missing key); magics show UsageError
 ├── ProviderError    the model API failed after retries; names provider, status and message
 ├── ToolError        a tool failed and the agent runs with ``strict=True``
 └── ReplayMissError  a replayed run asked for a request that was never recorded

:func:`did_you_mean` words the suggestion a usage error offers for a mistyped name;
:func:`at_boundary` shortens an error where it leaves a public call.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable
from typing import TypeVar

from ._internal.safe_text import clean

E = TypeVar("E", bound=BaseException)
logger = logging.getLogger("nbagent")


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


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` Did you mean 'model'?`` for the choices closest to a mistyped ``word``, else ``""``.

    The sentence starts with a space, so it can follow the error's own sentence.
    """
    close = difflib.get_close_matches(word, list(dict.fromkeys(choices)), n=3, cutoff=0.6)
    if not close:
        return ""
    return " Did you mean " + " or ".join(repr(c) for c in close) + "?"


def at_boundary(error: E) -> E:
    """``error`` as the public call that received it re-raises it: short.

    nbagent's own errors already say what went wrong and how to fix it; the frames
    inside nbagent (threads, the event loop, pydantic) and the exception it was
    chained from only bury that line under a long traceback. Both are dropped (the
    ``nbagent`` logger keeps them at debug level, ``NBAGENT_LOG=debug``), so the
    traceback is the caller's line and the public call's ``raise``. Use as
    ``raise at_boundary(exc) from None``.
    """
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("%s, in full:", type(error).__name__, exc_info=error)
    return error.with_traceback(None)
