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
from .tools import MCPError

USAGE = """%agent mcp add NAME [--prefix P] [--allow a,b] [--timeout S] -- COMMAND ARGS...
%agent mcp add NAME [options] URL     a streamable-HTTP server
%agent mcp list                       servers and their tools
%agent mcp remove NAME                stop a server and drop its tools
%agent mcp load PATH                  add the servers of an mcpServers JSON file"""


def mcp_command(words: list[str]) -> str:
    """Run one ``%agent mcp`` command; returns what to print.

    Raises:
        ConfigError: a mistake in the command, or a server that could not be started
            (its error says why: the magic shows it as one line, not a traceback).
    """
    try:
        return _command(words)
    except MCPError as exc:
        raise ConfigError(f"%agent mcp {words[0]}: {exc}") from None


def _command(words: list[str]) -> str:
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
        _check_runnable(command)
        return MCPServer.stdio(command[0], command[1:], **options)
    if len(words) == 1 and words[0].startswith(("http://", "https://")):
        return MCPServer.http(words[0], **options)
    raise ConfigError(f"%agent mcp add: give -- COMMAND ARGS... or a URL\n{USAGE}")


def _check_runnable(command: list[str]) -> None:
    """Refuse at once a command that is not there, or a script file that is missing.

    Starting the server would find out too, but only after importing the mcp SDK and
    waiting for the child to exit (seconds on a busy machine), and the SDK's error is
    just "Connection closed".
    """
    import shutil
    from pathlib import Path

    program = command[0]
    if shutil.which(program) is None:
        raise ConfigError(f"%agent mcp add: no program {program!r} (not found on PATH)")
    script = next((a for a in command[1:] if not a.startswith("-")), None)
    runner = Path(program).name.lower()
    if (
        script is not None
        and runner.startswith(("python", "node", "deno", "bun"))
        and Path(script).suffix in (".py", ".js", ".mjs", ".ts")
        and not Path(script).expanduser().exists()
    ):
        where = Path.cwd()
        raise ConfigError(f"%agent mcp add: no file {script!r} (looked in {where})")


def _list() -> str:
    if not KERNEL_SERVERS:
        return "No MCP servers. Add one with %agent mcp add NAME -- COMMAND ARGS..."
    lines = []
    for name, server in KERNEL_SERVERS.items():
        state = "running" if server.running else "stopped (starts on next call)"
        tools = ", ".join(t.name for t in server.get_tools()) if server.running else ""
        lines.append(f"{name} [{state}] {server!r}" + (f"\n  tools: {tools}" if tools else ""))
    return "\n".join(lines)
