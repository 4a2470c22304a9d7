"""``%agent mcp ...``: the text commands behind the magic (no IPython here).

::

    %agent mcp add NAME [--prefix P] [--allow a,b] [--timeout S] -- COMMAND ARGS...
    %agent mcp add NAME [options] URL        (streamable HTTP)
    %agent mcp list
    %agent mcp remove NAME
    %agent mcp load PATH                      (the mcpServers JSON format)

Each returns the text to print; mistakes raise ConfigError with the usage.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from .config import KERNEL_SERVERS, add_server, load_config, remove_server
from .server import MCPServer

USAGE = """%agent mcp add NAME [--prefix P] [--allow a,b] [--timeout S] -- COMMAND ARGS...
%agent mcp add NAME [options] URL     a streamable-HTTP server
%agent mcp list                       servers and their tools
%agent mcp remove NAME                stop a server and drop its tools
%agent mcp load PATH                  add the servers of an mcpServers JSON file"""


def mcp_command(words: list[str]) -> str:
    """Run one ``%agent mcp`` command; returns what to print."""
    if not words:
        return _list()
    command, rest = words[0], words[1:]
    if command == "list" and not rest:
        return _list()
    if command == "remove" and len(rest) == 1:
        remove_server(rest[0])
        return f"Removed MCP server {rest[0]!r}."
    if command == "load" and len(rest) == 1:
        loaded = load_config(rest[0])
        return "\n".join(
            f"{name}: {', '.join(tools) or '(no tools)'}" for name, tools in loaded.items()
        )
    if command == "add" and rest:
        server = _parse_add(rest)
        names = add_server(server)
        return f"MCP server {server.name!r}: {len(names)} tools ({', '.join(names)})"
    raise ConfigError(f"%agent mcp: expected one of:\n{USAGE}")


def _parse_add(words: list[str]) -> MCPServer:
    name, words = words[0], words[1:]
    if "--" in words:
        at = words.index("--")
        words, command = words[:at], words[at + 1 :]
    else:
        command = []
    options: dict[str, Any] = {"name": name}
    while words and words[0].startswith("--"):
        flag = words.pop(0)
        if not words:
            raise ConfigError(f"%agent mcp add: {flag} needs a value\n{USAGE}")
        value = words.pop(0)
        if flag == "--prefix":
            options["prefix"] = value
        elif flag == "--allow":
            options["allow"] = [v for v in value.split(",") if v]
        elif flag == "--timeout":
            try:
                options["timeout"] = float(value)
            except ValueError:
                raise ConfigError(f"%agent mcp add: --timeout {value!r} is not a number") from None
        else:
            raise ConfigError(f"%agent mcp add: unknown option {flag}\n{USAGE}")
    if command:
        if words:
            raise ConfigError(f"%agent mcp add: unexpected {' '.join(words)} before --\n{USAGE}")
        return MCPServer.stdio(command[0], command[1:], **options)
    if len(words) == 1 and words[0].startswith(("http://", "https://")):
        return MCPServer.http(words[0], **options)
    raise ConfigError(f"%agent mcp add: give -- COMMAND ARGS... or a URL\n{USAGE}")


def _list() -> str:
    if not KERNEL_SERVERS:
        return "No MCP servers. Add one with %agent mcp add NAME -- COMMAND ARGS..."
    lines = []
    for name, server in KERNEL_SERVERS.items():
        state = "running" if server.running else "stopped (starts on next call)"
        tools = ", ".join(t.name for t in server.get_tools()) if server.running else ""
        lines.append(f"{name} [{state}] {server!r}" + (f"\n  tools: {tools}" if tools else ""))
    return "\n".join(lines)
