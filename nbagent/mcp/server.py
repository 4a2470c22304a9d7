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
from typing import Any, TextIO

from .._internal.threads import background_loop, run_in_background
from ..errors import ConfigError
from ..tools import ToolSource
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
        where = spec.get("url") or " ".join([spec["command"], *spec["args"]])
        return f"MCPServer({self.name!r}, {kind}: {where})"

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
        import anyio
        from mcp import ClientSession

        self.starts += 1
        # The SDK validates results against output schemas with jsonschema, whose first
        # import can take seconds: import it in a thread while the server starts.
        warm = asyncio.get_running_loop().run_in_executor(None, _warm_imports)
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._connect())
                bad_output: list[str] = []

                async def on_message(message: Any) -> None:
                    if isinstance(message, Exception):  # output that is not JSON-RPC
                        bad_output.append(str(message).splitlines()[0][:200])

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
                        f"MCP server {self.name!r} did not answer initialize within "
                        f"{self.start_timeout:g} s ({self!r}){why}"
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
                if not isinstance(leaf, MCPError):
                    leaf = MCPError(
                        f"MCP server {self.name!r} failed to start: {type(leaf).__name__}: {leaf}"
                    )
                ready.set_exception(leaf)
            if not isinstance(exc, Exception):
                raise
        finally:
            self._session = None
            logger.info("MCP server %s stopped", self.name)

    def _connect(self) -> Any:
        kind, spec = self._transport
        if kind == "stdio":
            from mcp import StdioServerParameters, stdio_client

            return stdio_client(StdioServerParameters(**spec), errlog=_errlog())
        import httpx2

        client = httpx2.AsyncClient(headers=spec["headers"], timeout=httpx2.Timeout(30, read=300))
        return _http(spec["url"], client)

    async def _call(self, name: str, arguments: dict[str, Any]) -> Any:
        from mcp import MCPError as ProtocolError

        await self._ensure_started()
        session = self._session
        if session is None:
            raise MCPError(f"MCP server {self.name!r} is not running")
        try:
            result = await session.call_tool(name, arguments, read_timeout_seconds=self.timeout)
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


def _errlog() -> TextIO:
    """Where a child's stderr goes: the process's real stderr (a kernel's log), never a cell."""
    stream = sys.__stderr__
    if stream is not None:
        try:
            stream.fileno()
            return stream
        except (OSError, ValueError, AttributeError):
            pass
    return open(os.devnull, "w")  # noqa: SIM115 - kept for the child's life


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
