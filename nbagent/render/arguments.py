"""The one argument formatter: how a tool call's arguments read to a human.

Two views of the same rule, used by every surface:

- :func:`arguments_text`: the arguments as indented JSON, for round panels and the
  Markdown twin;
- :func:`call_signature`: ``get_weather(city="Oslo")`` on one line, for the plain-text
  twin, terminal progress and approval questions (cell, terminal and ChatWidget).

When the model's argument text did not parse (the call has no arguments but the
model sent text), both show that text as the model sent it: the human sees what
was asked, not an empty call.
"""

from __future__ import annotations

from .._internal.bounded import dumps
from ..messages import ToolCall

__all__ = ["APPROVAL_LIMIT", "arguments_text", "call_signature"]

APPROVAL_LIMIT = 200
"""Characters of arguments an approval question shows (in every surface)."""


def _unparsed(call: ToolCall) -> str | None:
    """The model's own argument text when it did not parse into arguments, else None."""
    if not call.arguments and call.raw_arguments:
        return call.raw_arguments
    return None


def arguments_text(call: ToolCall) -> str:
    """The arguments as indented JSON (non-JSON values as their ``str``)."""
    unparsed = _unparsed(call)
    if unparsed is not None:
        return unparsed
    return dumps(call.arguments, indent=2)


def call_signature(call: ToolCall, limit: int = 80) -> str:
    """``get_weather(city="Oslo")``, with the arguments cut to ``limit`` characters."""
    unparsed = _unparsed(call)
    if unparsed is not None:
        args = unparsed
    else:
        args = ", ".join(f"{k}={dumps(v)}" for k, v in call.arguments.items())
    if len(args) > limit:
        args = args[: limit - 3] + "…"
    return f"{call.name}({args})"
