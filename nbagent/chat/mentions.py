"""``@name`` mentions: kernel variables and tools, suggested as the user types.

A mentioned variable is sent the way a ``{name}`` prompt field is (described, bounded,
by :func:`nbagent.kernel.prompt.interpolate_prompt`) and shown as a chip. Suggesting
runs no user code: it reads the namespace's keys and each value's type name from the
type's own ``__dict__`` (a class cannot fake it with a property), never a ``repr``.
"""

from __future__ import annotations

import re
import types
from collections.abc import Iterable
from typing import Any

from ..kernel.namespace import KernelView
from ..render import escape
from .figures import is_figure

MENTION = re.compile(r"(?<![\w@.])@([A-Za-z_]\w*)")
"""``@name`` not inside a word or an e-mail address."""
SUGGESTIONS = 8
"""Suggestions shown at once."""

_TYPE_NAME = type.__dict__["__name__"]
_NOT_VALUES = (types.ModuleType, type)  # imports and classes: not data to talk about


def suggestions(
    view: KernelView, tool_names: Iterable[str], prefix: str, limit: int = SUGGESTIONS
) -> list[dict[str, str]]:
    """Variables, then tools, whose name starts with ``prefix`` (any case).

    Each is ``{"name", "kind", "detail"}``: kind ``"variable"`` (detail: its type),
    ``"figure"`` (a matplotlib Figure, which the page attaches as an image when picked)
    or ``"tool"``.
    """
    wanted = prefix.lower()
    tools = set(tool_names)
    found: list[dict[str, str]] = []
    for name, value in list(view.ns.items()):  # a plain dict: copying it runs no user code
        if len(found) >= limit:
            break
        if view.is_hidden(name) or name in tools or not name.lower().startswith(wanted):
            continue  # a tool's own name is offered once, as the tool
        if issubclass(type(value), _NOT_VALUES):  # not isinstance: it asks a proxy's __class__
            continue
        kind = "figure" if is_figure(value) else "variable"
        found.append({"name": name, "kind": kind, "detail": _type_name(value)})
    for name in sorted(tools):
        if len(found) >= limit:
            break
        if name.lower().startswith(wanted):
            found.append({"name": name, "kind": "tool", "detail": "tool"})
    return found


def expand_mentions(text: str, view: KernelView | None) -> str:
    """``text`` with each ``@variable`` as a ``{variable}`` field; other ``@words`` stay."""
    if view is None or "@" not in text:
        return text

    def field(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in view.ns and not view.is_hidden(name):
            return "{" + name + "}"
        return match.group(0)

    return MENTION.sub(field, text)


def prompt_html(prompt: str) -> str:
    """The user's message, escaped, with its ``@mentions`` as chips."""
    parts: list[str] = []
    last = 0
    for match in MENTION.finditer(prompt):
        parts.append(escape(prompt[last : match.start()]))
        parts.append(f'<span class="nbagent-chip">@{escape(match.group(1))}</span>')
        last = match.end()
    parts.append(escape(prompt[last:]))
    return "".join(parts)


def user_html(prompt: str, notes: Iterable[str] = ()) -> str:
    """The user's message as a turn starts: its text with chips, then the notes under it."""
    lines = "".join(f'<div class="nbagent-sent-note">{escape(note)}</div>' for note in notes)
    return (
        '<div class="nbagent-user"><div class="nbagent-user-label">You</div>'
        f"{prompt_html(prompt)}</div>{lines}"
    )


def _type_name(value: Any) -> str:
    return str(_TYPE_NAME.__get__(type(value)))
