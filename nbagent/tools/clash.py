"""The one collision rule for two tools of one name (see :mod:`.sources` for the rule).

Kept apart from :mod:`.sources` so the kernel-wide registry (:mod:`.tool`) applies
it too when a ``@tool`` takes the name of an MCP server's tool.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from ..errors import ConfigError


class _Guarded(Protocol):
    requires_approval: bool


T = TypeVar("T", bound=_Guarded)


def name_clash(name: str, first: str, second: str) -> ConfigError:
    """The error for two sources offering tool ``name``, naming both and the fixes."""
    return ConfigError(
        f"tool name {name!r} is offered by {first} and by {second}; nbagent never lets "
        "one replace the other. Give the MCP server a prefix (MCPServer(..., prefix=...) "
        "or %agent mcp add NAME --prefix P ...), leave the tool out (allow=[...] or "
        "--allow), or drop one of them"
    )


def settle(
    name: str, first: tuple[str | None, T], second: tuple[str | None, T]
) -> tuple[str | None, T]:
    """The (origin, tool) that keeps ``name``, or a ConfigError when neither may.

    An origin is the source's name, or None for a tool you wrote yourself.
    """
    first_origin, second_origin = first[0], second[0]
    if first_origin is None and second_origin is None:
        raise ConfigError(
            f"two different tools are named {name!r} in tools=[...]: rename one "
            "(@tool(name=...)) or drop one"
        )
    if first_origin is not None and second_origin is not None:
        raise name_clash(name, first_origin, second_origin)
    # Precedence: the tool you wrote takes the name, if it asks approval when the other did.
    mine, (origin, theirs) = (first, second) if first_origin is None else (second, first)
    if theirs.requires_approval and not mine[1].requires_approval:
        raise ConfigError(
            f"your tool {name!r} would replace the one from {origin}, which asks approval "
            "before it runs, with one that does not: give yours requires_approval=True, "
            f"rename it (@tool(name=...)), or drop {origin}"
        )
    return mine
