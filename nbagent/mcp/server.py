"""MCPServer: one MCP server (a stdio child process or streamable HTTP), its session, tools.

The session lives in one task on nbagent's background event loop (the loop the
sync API uses), whatever loop a run is on: the mcp SDK's transports are anyio
context managers that must be entered and left by the same task. Calls from
another loop are handed over thread-safely. A server starts on first use, stays
up until :meth:`MCPServer.close` (``Agent.close()`` for servers an agent was
given, interpreter exit for all), and a server that crashed is started again on
the next call.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import sys
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._internal.redaction import remember
from .._internal.threads import background_loop, run_in_background
from ..errors import ConfigError
from ..tools import ToolSource
from .redact import command_secrets, hide, shown_command, shown_url, url_secrets
from .stderr import StderrLines, with_stderr
from .tools import MCPError, MCPTool, check_schema, to_value, wire_name

logger = logging.getLogger("nbagent")

START_TIMEOUT = 30.0
"""Seconds a server has to start and answer ``initialize``."""

_LIVE: weakref.WeakSet[MCPServer] = weakref.WeakSet()


class MCPServer(ToolSource):
    """Tools from an MCP server, usable wherever nbagent takes tools.

    Build one with :meth:`stdio` or :meth:`http`, then pass it in ``tools=[...]``
    beside ``@tool`` functions::

        files = MCPServer.stdio("npx", ["-y", "@modelcontextprotocol/server-filesystem", "."])
        agent = Agent("openai:gpt-4o-mini", tools=[files, add])

    Args (of both constructors):
        name: what panels and ``%agent tools`` call the server (default: derived
            from the command or URL).
        prefix: put ``PREFIX_`` before every tool name (keeps names unique across servers).
        allow: only these tools (the server's names); None for all.
        requires_approval: True for every tool, a list of tool names, or False.
        timeout: seconds per call before it becomes a "timed out" error result.
        start_timeout: seconds to start the server and get its answer to ``initialize``.
    """

    def __init__(
        self,
        transport: tuple[str, dict[str, Any]],
        *,
        name: str,
        prefix: str | None = None,
        allow: Iterable[str] | None = None,
        requires_approval: bool | Iterable[str] = False,
        timeout: float | None = None,
        start_timeout: float = START_TIMEOUT,
    ) -> None:
        self._transport = transport
        self.name = name
        self.prefix = prefix
        self.allow = None if allow is None else set(allow)
        self.requires_approval = (
            requires_approval if isinstance(requires_approval, bool) else set(requires_approval)
        )
        self.timeout = timeout
        self.start_timeout = start_timeout
        self._session: Any = None
        self._owner: asyncio.Task[None] | None = None
        self._closing: asyncio.Event | None = None
        self._starting: asyncio.Future[list[Any]] | None = None
        self._tools: list[MCPTool] | None = None
        kind, spec = transport
        if kind == "stdio":
            self._secrets = command_secrets(spec["args"], spec.get("env"))
        else:
            self._secrets = url_secrets(spec["url"], spec.get("headers"))
        remember(self._secrets)  # the history and the log redact them too
        self._stderr = StderrLines(name) if kind == "stdio" else None
        self._command_line: tuple[str, list[str]] = ("", [])
        self.starts = 0
        """How many times the server was started (a restart after a crash adds one)."""

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        **options: Any,
    ) -> MCPServer:
        """A server run as a child process, speaking MCP over its stdin and stdout."""
        if env is not None and not (
            isinstance(env, Mapping) and all(isinstance(v, str) for v in env.values())
        ):
            kind = type(env).__name__
            raise ConfigError(f"MCPServer.stdio: env must map names to strings, not {kind}")
        options.setdefault("name", _stem(args[0] if args and command in _RUNNERS else command))
        spec = {"command": command, "args": list(args), "env": dict(env or {}) or None}
        spec["cwd"] = None if cwd is None else os.fspath(cwd)
        return cls(("stdio", spec), **options)

    @classmethod
    def http(cls, url: str, headers: Mapping[str, str] | None = None, **options: Any) -> MCPServer:
        """A server reached over MCP's streamable HTTP transport at ``url``."""
        from urllib.parse import urlsplit

        options.setdefault("name", urlsplit(url).hostname or "http")
        return cls(("http", {"url": url, "headers": dict(headers or {})}), **options)

    def __repr__(self) -> str:
        kind, spec = self._transport
        if kind == "stdio":
            where = shown_command(spec["command"], spec["args"])
        else:
            where = shown_url(spec["url"])
        return f"MCPServer({self.name!r}, {kind}: {where})"

    def _hide(self, text: str) -> str:
        """An error message naming this server, with its credentials redacted."""
        return hide(text, self._secrets)

    @property
    def origin(self) -> str:
        """How collision errors name the server: ``MCP server 'files'``."""
        return f"MCP server {self.name!r}"

    @property
    def running(self) -> bool:
        """Whether the server's session is up."""
        return self._session is not None

    # -- tools -------------------------------------------------------------------

    def get_tools(self) -> list[MCPTool]:
        """The server's tools as nbagent tools (starts the server if needed; sync)."""
        if self._tools is None:
            run_in_background(self.list_tools)
        assert self._tools is not None
        return list(self._tools)

    async def list_tools(self) -> list[MCPTool]:
        """Start the server if needed and return its tools (after prefix and allow-list)."""
        listing = await self._on_owner_loop(self._ensure_started)
        tools = []
        for item in listing:
            if self.allow is not None and item.name not in self.allow:
                continue
            approval = self.requires_approval
            tools.append(
                MCPTool(
                    server=self.name,
                    remote_name=item.name,
                    name=wire_name(item.name, self.prefix),
                    description=item.description or item.title or "",
                    parameters=check_schema(self.name, item.name, item.input_schema),
                    call=self.call,
                    timeout=self.timeout,
                    requires_approval=approval
                    if isinstance(approval, bool)
                    else item.name in approval,
                )
            )
        if self.allow is not None:
            missing = self.allow - {item.name for item in listing}
            if missing:
                raise ConfigError(
                    f"MCP server {self.name!r} has no tool named {', '.join(sorted(missing))}"
                )
        names = [t.name for t in tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigError(f"MCP server {self.name!r}: tool names collide: {duplicates}")
        self._tools = tools
        return list(tools)

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call tool ``name`` (the server's name for it); returns its value or raises MCPError."""
        return await self._on_owner_loop(lambda: self._call(name, arguments))

    # -- lifecycle -----------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop the server (a stdio child is ended); it starts again on the next use."""
        await self._on_owner_loop(self._stop)

    def close(self) -> None:
        """:meth:`aclose` for synchronous code."""
        if self._owner is None or self._owner.done():
            return
        run_in_background(self.aclose)

    async def _on_owner_loop(self, make: Any) -> Any:
        loop = background_loop()
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover - always called from async code
            running = None
        if running is loop:
            return await make()
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(make(), loop))

    async def _ensure_started(self) -> list[Any]:
        if self._starting is None or (self._owner is not None and self._owner.done()):
            loop = asyncio.get_running_loop()
            self._starting = loop.create_future()
            self._closing = asyncio.Event()
            self._owner = loop.create_task(self._own(self._starting, self._closing))
            _LIVE.add(self)
            _register_atexit()
        return await asyncio.shield(self._starting)

    async def _own(self, ready: asyncio.Future[list[Any]], closing: asyncio.Event) -> None:
        """The one task that enters, holds and leaves the server's session."""
        self.starts += 1
        mark = self._stderr.mark if self._stderr is not None else 0
        try:
            # Before importing the SDK: a missing command or script is an error at once.
            self._command_line = _preflight(self.name, self._transport)
        except MCPError as exc:
            ready.set_exception(MCPError(self._hide(str(exc))))
            return
        import anyio
        from mcp import ClientSession

        _quiet_sdk_parse_errors()
        # The SDK validates results against output schemas with jsonschema, whose first
        # import can take seconds: import it in a thread while the server starts.
        warm = asyncio.get_running_loop().run_in_executor(None, _warm_imports)
        try:
            async with contextlib.AsyncExitStack() as stack:
                try:
                    read, write = await stack.enter_async_context(self._connect())
                finally:
                    if self._stderr is not None:  # the child holds its own copy
                        self._stderr.close_writer()
                bad_output: list[str] = []

                async def on_message(message: Any) -> None:
                    if isinstance(message, Exception):  # output that is not JSON-RPC
                        line = str(message).splitlines()[0][:200]
                        if len(bad_output) < 10:
                            bad_output.append(line)
                        logger.info("MCP server %s wrote what is not JSON-RPC: %s", self.name, line)

                session = await stack.enter_async_context(
                    ClientSession(read, write, message_handler=on_message)
                )
                try:
                    with anyio.fail_after(self.start_timeout):
                        await session.initialize()
                        listing = await _list_all(session)
                except TimeoutError:
                    why = f"; it wrote what is not JSON-RPC: {bad_output[0]}" if bad_output else ""
                    raise MCPError(
                        self._hide(
                            f"MCP server {self.name!r} did not answer initialize within "
                            f"{self.start_timeout:g} s ({self!r}){why}"
                        )
                    ) from None
                with contextlib.suppress(Exception):
                    await warm
                self._session = session
                ready.set_result(listing)
                logger.info("MCP server %s started with %d tools", self.name, len(listing))
                await closing.wait()
        except BaseException as exc:
            if not ready.done():
                leaf = _leaf(exc)
                message = str(leaf) if isinstance(leaf, MCPError) else (
                    f"MCP server {self.name!r} failed to start: {type(leaf).__name__}: {leaf}"
                )  # fmt: skip
                if self._stderr is not None and isinstance(exc, Exception):  # not a cancel
                    message = with_stderr(message, await self._stderr.settled_since(mark))
                ready.set_exception(MCPError(self._hide(message)))
            if not isinstance(exc, Exception):
                raise
        finally:
            self._session = None
            logger.info("MCP server %s stopped", self.name)

    def _connect(self) -> Any:
        kind, spec = self._transport
        if kind == "stdio":
            from mcp import StdioServerParameters, stdio_client

            assert self._stderr is not None
            command, args = self._command_line
            parameters = StdioServerParameters(
                **{**spec, "command": command, "args": args},
                # One invalid byte must not break the stream: it becomes U+FFFD.
                encoding_error_handler="replace",
            )
            return stdio_client(parameters, errlog=self._stderr.open())
        import httpx2

        client = httpx2.AsyncClient(headers=spec["headers"], timeout=httpx2.Timeout(30, read=300))
        return _http(spec["url"], client)

    async def _call(self, name: str, arguments: dict[str, Any]) -> Any:
        await self._ensure_started()
        mark = self._stderr.mark if self._stderr is not None else 0
        try:
            return await self._call_once(name, arguments)
        except MCPError as exc:
            message = str(exc)
            if self._stderr is not None:  # the cause an SDK server writes only there
                message = with_stderr(message, await self._stderr.settled_since(mark))
            raise MCPError(self._hide(message)) from None

    async def _call_once(self, name: str, arguments: dict[str, Any]) -> Any:
        from mcp import MCPError as ProtocolError

        session, owner = self._session, self._owner
        if session is None or owner is None:
            raise MCPError(f"MCP server {self.name!r} is not running")
        request = asyncio.ensure_future(
            session.call_tool(name, arguments, read_timeout_seconds=self.timeout)
        )
        try:
            # The session's task ending (a broken stream, a dead process) ends the call too.
            await asyncio.wait({request, owner}, return_when=asyncio.FIRST_COMPLETED)
            if not request.done():
                request.cancel()
                await self._stop()
                raise MCPError(
                    f"MCP server {self.name!r} stopped during the call; "
                    "it is started again on the next call"
                )
            result = request.result()
        except ProtocolError as exc:
            if exc.code == -32000:  # CONNECTION_CLOSED: the process died or the link broke
                await self._stop()
                raise MCPError(
                    f"MCP server {self.name!r} stopped during the call ({exc}); "
                    "it is started again on the next call"
                ) from None
            raise MCPError(f"{exc} (MCP error {exc.code})") from None
        except (OSError, EOFError, RuntimeError) as exc:
            await self._stop()
            raise MCPError(
                f"MCP server {self.name!r} failed during the call ({type(exc).__name__}: {exc}); "
                "it is started again on the next call"
            ) from None
        finally:
            if not request.done():
                request.cancel()
        return to_value(result)

    async def _stop(self) -> None:
        owner, closing = self._owner, self._closing
        self._starting = None
        if owner is None or closing is None:
            return
        closing.set()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(owner), 10)
        if not owner.done():
            owner.cancel()


class _DropParseErrors(logging.Filter):
    """Drops the SDK's traceback for a stdout line that is not JSON-RPC.

    A hostile or chatty server would otherwise put a 15-line traceback holding its
    output into the cell for every such line (through logging's last-resort handler);
    nbagent logs one redacted line instead (``on_message`` in :meth:`MCPServer._own`).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Failed to parse JSONRPC message")


_PARSE_ERRORS_FILTER = _DropParseErrors()


def _quiet_sdk_parse_errors() -> None:
    sdk_logger = logging.getLogger("mcp.client.stdio")
    if _PARSE_ERRORS_FILTER not in sdk_logger.filters:
        sdk_logger.addFilter(_PARSE_ERRORS_FILTER)


def _warm_imports() -> None:
    with contextlib.suppress(ImportError):
        import jsonschema  # noqa: F401


def _leaf(exc: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups: what actually went wrong."""
    while getattr(exc, "exceptions", None):
        group: Any = exc
        inner = [e for e in group.exceptions if isinstance(e, MCPError)]
        exc = inner[0] if inner else group.exceptions[0]
    return exc


async def _list_all(session: Any) -> list[Any]:
    """Every tool, following ``nextCursor`` pages."""
    from mcp.types import PaginatedRequestParams

    tools: list[Any] = []
    cursor = None
    while True:
        params = None if cursor is None else PaginatedRequestParams(cursor=cursor)
        page = await session.list_tools(params=params)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            return tools


@contextlib.asynccontextmanager
async def _http(url: str, client: Any) -> Any:
    from mcp.client.streamable_http import streamable_http_client

    async with client, streamable_http_client(url, http_client=client) as streams:
        yield streams[0], streams[1]


_RUNNERS = {"python", "python3", "uv", "uvx", "npx", "node", "deno", "bun", sys.executable}


def _stem(command: str) -> str:
    base = os.path.basename(command.rstrip("/\\")) or "mcp"
    return base.rsplit(".", 1)[0] if base.endswith((".py", ".js", ".ts")) else base


GUARD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "guard.py")


_SCRIPTS = (".py", ".js", ".mjs", ".cjs", ".ts")


def _preflight(name: str, transport: tuple[str, dict[str, Any]]) -> tuple[str, list[str]]:
    """The command line that starts a stdio server: under :mod:`.guard` on POSIX.

    The command is looked up first (on the PATH the server gets), and the script a
    runner is given (``python server.py``), so a missing one is a clear error at once
    rather than a closed connection after a process start.
    """
    import shutil

    kind, spec = transport
    if kind != "stdio":
        return "", []
    command, args = spec["command"], list(spec["args"])
    path = (spec.get("env") or {}).get("PATH", os.environ.get("PATH"))
    cwd = spec.get("cwd") or os.getcwd()
    if os.sep in command:
        candidate = os.path.join(cwd, command)
        found = candidate if os.access(candidate, os.X_OK) else None
    else:
        found = shutil.which(command, path=path)
    if found is None:
        raise MCPError(
            f"MCP server {name!r} failed to start: no executable {command!r} "
            + ("in its working directory" if os.sep in command else "on the PATH")
        )
    runner = _stem(command).startswith(("python", "node", "bun"))
    script = args[0] if runner and args and args[0].endswith(_SCRIPTS) else ""
    if script and not os.path.exists(os.path.join(cwd, script)):
        raise MCPError(f"MCP server {name!r} failed to start: {command} cannot open {script}: "
                       "no such file")  # fmt: skip
    if sys.platform == "win32":  # pragma: no cover - the SDK's job object ends the tree there
        return found, args
    return sys.executable, ["-I", "-S", GUARD, found, *args]


_atexit_registered = False


def _register_atexit() -> None:
    global _atexit_registered
    if not _atexit_registered:
        atexit.register(close_all)
        _atexit_registered = True


def close_all() -> None:
    """Stop every running MCP server (registered with ``atexit``)."""
    servers = [s for s in list(_LIVE) if s._owner is not None and not s._owner.done()]
    if not servers:
        return

    async def stop_all() -> None:
        await asyncio.gather(*(s.aclose() for s in servers), return_exceptions=True)

    with contextlib.suppress(Exception):
        run_in_background(stop_all)
