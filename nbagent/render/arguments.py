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

import json

from .._internal.bounded import MAX_STRING, dumps
from ..kernel.display import MAX_APPROVAL_CHARS, visible_code
from ..messages import ToolCall

__all__ = ["APPROVAL_LIMIT", "approval_signature", "arguments_text", "call_signature"]

APPROVAL_LIMIT = MAX_APPROVAL_CHARS
"""Characters of arguments an approval question shows whole (in every surface); a call
with more is refused without asking (the user approves only what they were shown)."""


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
    args = _arguments_line(call, limit)
    if len(args) > limit:
        args = args[: limit - 3] + "…"
    return f"{call.name}({args})"


def _arguments_line(call: ToolCall, limit: int) -> str:
    unparsed = _unparsed(call)
    if unparsed is not None:
        return unparsed
    return ", ".join(f"{k}={_value_text(v, limit)}" for k, v in call.arguments.items())


def _value_text(value: object, limit: int) -> str:
    """One argument as JSON: exact when the limit allows more than a bounded view keeps."""
    if limit > MAX_STRING:
        try:
            return json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            pass
    return dumps(value)


def approval_signature(call: ToolCall) -> str | None:
    """``delete(path="/tmp/x")`` exactly as it will run, hidden characters marked, or None.

    None when it is longer than :data:`APPROVAL_LIMIT`: such a call cannot be shown
    whole, so it must not be asked about (it is refused).
    """
    args = _arguments_line(call, APPROVAL_LIMIT + 1)
    if len(args) > APPROVAL_LIMIT:
        return None
    return visible_code(f"{call.name}({args})")
