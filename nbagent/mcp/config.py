"""The ``mcpServers`` JSON format, and the kernel-wide servers behind ``%agent mcp``.

The format Claude Desktop, VS Code and jupyter-ai read::

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
                  "env": {"DEBUG": "1"}},
        "search": {"url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "..."}}
    }}

(VS Code's ``"servers"`` key is read too.) Kernel-wide servers add their tools to
the ``@tool`` registry, so ``%%agent`` and agents built with ``tools=None`` see them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..kernel import KERNEL_TOOL_NAMES, KERNEL_TOOLS_ORIGIN
from ..tools import REGISTRY
from ..tools.sources import name_clash
from .server import MCPServer

CONFIG_VARIABLE = "NBAGENT_MCP_CONFIG"
"""A path to an ``mcpServers`` JSON file whose servers ``%load_ext nbagent`` adds."""

KERNEL_SERVERS: dict[str, MCPServer] = {}
"""Servers added for the kernel's life (``%agent mcp add``/``load``), by name."""


def servers_from_config(data: Mapping[str, Any] | str | os.PathLike[str]) -> list[MCPServer]:
    """MCPServer objects (not started) from ``mcpServers`` JSON data or a file holding it."""
    source = "the configuration"
    if not isinstance(data, Mapping):
        source = os.fspath(data)
        try:
            data = json.loads(Path(source).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read MCP configuration {source}: {exc}") from None
        except ValueError as exc:
            raise ConfigError(f"MCP configuration {source} is not JSON: {exc}") from None
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: expected a JSON object with an 'mcpServers' key")
    entries = data.get("mcpServers", data.get("servers"))
    if not isinstance(entries, Mapping):
        raise ConfigError(f"{source}: expected an 'mcpServers' object of named servers")
    servers = []
    for name, entry in entries.items():
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{source}: server {name!r} is not an object")
        options = {"name": name}
        if entry.get("command"):
            args = entry.get("args") or []
            if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
                raise ConfigError(f"{source}: server {name!r}: 'args' must be a list of strings")
            servers.append(
                MCPServer.stdio(
                    entry["command"], args, env=entry.get("env"), cwd=entry.get("cwd"), **options
                )
            )
        elif entry.get("url"):
            servers.append(MCPServer.http(entry["url"], entry.get("headers"), **options))
        else:
            raise ConfigError(f"{source}: server {name!r} needs a 'command' or a 'url'")
    return servers


def add_server(server: MCPServer) -> list[str]:
    """Start ``server`` for the kernel's life and register its tools; returns their names.

    Raises:
        ConfigError: one of its tools has the name of a registered tool or of a kernel
            tool (``%%agent --kernel`` would offer both): nothing is added.
    """
    if server.name in KERNEL_SERVERS:
        remove_server(server.name)
    tools = server.get_tools()
    for t in tools:
        held = REGISTRY.get(t.name)
        if t.name in KERNEL_TOOL_NAMES:
            taken_by = f"{KERNEL_TOOLS_ORIGIN} (what %%agent --kernel adds)"
        elif held is not None and held.origin != server.origin:
            taken_by = held.origin or f"your @tool {t.name!r}"
        else:
            continue
        server.close()
        raise name_clash(t.name, taken_by, server.origin)
    KERNEL_SERVERS[server.name] = server
    for t in tools:
        REGISTRY.add(t)
    return [t.name for t in tools]


def remove_server(name: str) -> None:
    """Stop a kernel-wide server and unregister its tools."""
    server = KERNEL_SERVERS.pop(name, None)
    if server is None:
        known = ", ".join(sorted(KERNEL_SERVERS)) or "none"
        raise ConfigError(f"no MCP server named {name!r} (servers: {known})")
    for tool_name in [n for n, t in REGISTRY.items() if t.origin == server.origin]:
        REGISTRY.remove(tool_name)
    server.close()


def load_config(path: str | os.PathLike[str]) -> dict[str, list[str]]:
    """Add every server of an ``mcpServers`` file for the kernel's life; tool names by server.

    A server refused by :func:`add_server` stops the loading with its ConfigError; the
    servers added before it stay.
    """
    return {server.name: add_server(server) for server in servers_from_config(path)}
