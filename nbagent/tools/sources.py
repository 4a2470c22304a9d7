"""Tool sources, and the one rule that puts a run's tools together.

A :class:`ToolSource` yields several tools and may own resources: an MCP server
(:class:`nbagent.mcp.MCPServer`), the kernel toolset (:class:`nbagent.kernel.KernelTools`,
what ``kernel=True`` turns on) or a user's own subclass. Anything that takes
``tools=[...]`` takes sources beside ``@tool`` functions.

The rule, the same for every source (README, "Tool sources"):

- **Collision**: two different tools of one name are a :class:`ConfigError` naming
  both origins and the fix (a prefix, an allow-list, or dropping one). One tool never
  replaces another silently.
- **Precedence**: one exception. A tool you wrote yourself (a function or
  :class:`Tool` in ``tools=``, or a ``@tool`` in the kernel) may take the name of a
  source's tool and replaces it, but only if it asks approval whenever the source's
  tool does: a tool that asks approval is never replaced by one that does not.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeAlias

from .clash import name_clash, settle
from .tool import REGISTRY, Tool


class ToolSource(abc.ABC):
    """Anything that yields tools: MCP servers, the kernel toolset, your own.

    Subclass it and implement :meth:`get_tools`; override :meth:`run_context` to add
    text to every run's system message, :meth:`aclose` to release what the source
    holds (``Agent.close()`` calls it for the sources the agent was given).
    """

    @property
    def origin(self) -> str:
        """How errors and listings name the source ("MCP server 'files'", "the kernel tools")."""
        return f"tool source {type(self).__name__}"

    @abc.abstractmethod
    def get_tools(self) -> Sequence[Tool]:
        """The source's tools. May block (an MCP server starts): called from sync code."""

    def run_context(self) -> str | None:
        """Text for the system message of each run that uses the source (None: none)."""
        return None

    async def aclose(self) -> None:  # noqa: B027 - a source without resources has nothing to do
        """Release the source's processes and connections; it may be used again after."""


ToolItem: TypeAlias = Tool | Callable[..., Any] | ToolSource
"""What ``tools=[...]`` takes: ``@tool`` functions, plain functions, tool sources."""

_Entry: TypeAlias = tuple[str | None, Tool]
"""A tool and its origin: the source's name, or None for a tool you wrote yourself."""


def as_tools(items: Iterable[ToolItem] | None) -> dict[str, Tool]:
    """Tools by name from ``tools=[...]`` (functions wrapped, sources expanded).

    None gives the kernel-wide registry. A name clash is a ConfigError (see the
    module's rule).
    """
    return merge_tools(_entries(items))


def gather_tools(
    items: Iterable[ToolItem] | None,
    extra: Sequence[ToolSource] = (),
    *,
    with_context: bool = True,
) -> tuple[dict[str, Tool], str | None]:
    """A run's tools by name and the text its sources add to the system message.

    Args:
        items: the agent's ``tools=[...]`` (or one run's), None for every ``@tool``
            in the kernel (looked up now).
        extra: sources switched on by a flag (``kernel=True``); their tools come first.
        with_context: False skips :meth:`ToolSource.run_context` (a check only).

    Raises:
        ConfigError: two tools share a name against the rule in this module's docstring.
    """
    items = None if items is None else list(items)
    own = [item for item in items or () if isinstance(item, ToolSource)]
    sources = [*extra, *(s for s in own if all(s is not e for e in extra))]
    entries = [(source.origin, t) for source in extra for t in source.get_tools()]
    tools = merge_tools([*entries, *_entries(items)])
    if not with_context:
        return tools, None
    contexts = [text for source in sources if (text := source.run_context())]
    return tools, "\n\n".join(contexts) or None


__all__ = ["ToolItem", "ToolSource", "as_tools", "gather_tools", "merge_tools", "name_clash"]


def merge_tools(entries: Iterable[_Entry]) -> dict[str, Tool]:
    """Tools by name, in first-seen order, settling each shared name by the one rule."""
    tools: dict[str, Tool] = {}
    origins: dict[str, str | None] = {}
    for origin, t in entries:
        held = tools.get(t.name)
        if held is None:
            tools[t.name], origins[t.name] = t, origin
        elif not _same(held, t):
            # Assigning keeps the name's place: a replaced tool's position stays.
            origins[t.name], tools[t.name] = settle(t.name, (origins[t.name], held), (origin, t))
    return tools


def _entries(items: Iterable[ToolItem] | None) -> Iterator[_Entry]:
    if items is None:  # the kernel-wide registry: @tool functions and %agent mcp servers' tools
        yield from ((t.origin, t) for t in REGISTRY.values())
        return
    for item in items:
        if isinstance(item, ToolSource):
            yield from ((t.origin or item.origin, t) for t in item.get_tools())
        else:
            t = item if isinstance(item, Tool) else Tool(item)
            yield t.origin, t


def _same(a: Tool, b: Tool) -> bool:
    """One tool seen twice (a source given twice, ``obj.method`` bound twice)."""
    return a is b or (type(a) is type(b) and a.fn == b.fn)
