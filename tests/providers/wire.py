"""A real HTTP/1.1 server on 127.0.0.1 that serves scripted or recorded responses.

It runs on its own event loop in a daemon thread, so the code under test talks
to it over a real socket from any loop (pytest-asyncio's, nbagent's background
loop). Replies are served strictly in order, one per request::

    server = WireServer()                       # or the ``wire_server`` fixture
    server.add(Reply(429, {"error": {"message": "slow down"}}, headers={"retry-after": "0"}))
    server.add(Reply(200, {"choices": [...]}))
    server.add(Reply.sse([{"choices": [...]}, "[DONE]"]))    # a text/event-stream
    server.add(*replies_for(cassette))          # replay a cassette, response by response
    ... run the adapter with base_url=server.url ...
    server.requests        # what the client sent: RecordedRequest(method, url, headers, body)
    server.count           # number of requests received

Fault injection on a Reply: ``first_byte_delay`` (seconds before the status
line), ``chunk_delay`` (between body chunks), ``drop_after`` (abort the socket
after that many body chunks: a connection reset mid-stream), ``chunks`` (the body
pieces, sent with chunked transfer-encoding so the client sees them one by one).
A request with no reply left gets HTTP 599 ``{"error": {"message": "no scripted
reply left"}}`` so a test fails loudly instead of hanging.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .cassettes import Cassette, RecordedRequest, RecordedResponse

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    408: "Request Timeout",
    409: "Conflict",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    529: "Overloaded",
    599: "No Reply Left",
}


@dataclass
class Reply:
    """One scripted HTTP response (see module docstring for the fault options)."""

    status: int = 200
    body: bytes | str | dict[str, Any] | list[Any] = b""
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes] | None = None
    first_byte_delay: float = 0.0
    chunk_delay: float = 0.0
    drop_after: int | None = None

    def body_bytes(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode("utf-8")
        return json.dumps(self.body).encode("utf-8")

    @classmethod
    def sse(cls, events: list[Any], *, status: int = 200, **options: Any) -> Reply:
        """A text/event-stream: each item is a JSON payload (dict) or raw data text
        (``"[DONE]"``), or an ``(event_name, payload)`` tuple. One chunk per event."""
        chunks = []
        for item in events:
            name, payload = item if isinstance(item, tuple) else ("", item)
            data = payload if isinstance(payload, str) else json.dumps(payload)
            head = f"event: {name}\n" if name else ""
            chunks.append(f"{head}data: {data}\n\n".encode())
        headers = {"content-type": "text/event-stream", **options.pop("headers", {})}
        return cls(status, b"", headers, chunks, **options)

    @classmethod
    def ndjson(cls, values: list[Any], *, status: int = 200, **options: Any) -> Reply:
        """An application/x-ndjson stream, one chunk per line."""
        chunks = [json.dumps(v).encode() + b"\n" for v in values]
        headers = {"content-type": "application/x-ndjson", **options.pop("headers", {})}
        return cls(status, b"", headers, chunks, **options)

    @classmethod
    def recorded(cls, response: RecordedResponse, *, chunk_size: int = 97) -> Reply:
        """Serve a recorded response; streams go out chunked in ``chunk_size`` pieces
        (odd size on purpose: splits land mid-line and mid-UTF-8 character)."""
        headers = {"content-type": response.content_type or "application/json"}
        body = response.body
        if response.is_stream:
            chunks = [body[i : i + chunk_size] for i in range(0, len(body), chunk_size)]
            return cls(response.status, b"", headers, chunks)
        return cls(response.status, body, headers)


def replies_for(cassette: Cassette, *, chunk_size: int = 97) -> list[Reply]:
    """One Reply per recorded response, in order."""
    return [Reply.recorded(r, chunk_size=chunk_size) for r in cassette.responses]


class WireServer:
    """The loopback server. ``url`` is ``http://127.0.0.1:<port>``. Close with :meth:`close`."""

    def __init__(self, responder: Callable[[RecordedRequest], Reply] | None = None) -> None:
        """``responder`` (optional) answers any request when no scripted reply is left."""
        self.responder = responder
        self.connections = 0
        """TCP connections accepted so far (keep-alive reuse shows as fewer than requests)."""
        self.keep_requests = True
        """False stops recording requests (long benchmark runs)."""
        self.requests: list[RecordedRequest] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._server: asyncio.base_events.Server | None = None
        self._thread = threading.Thread(target=self._serve, name="wire-server", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        assert self._server is not None
        self.port: int = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"

    # -- test API ------------------------------------------------------------------

    def add(self, *replies: Reply) -> WireServer:
        with self._lock:
            self._replies.extend(replies)
        return self

    @property
    def count(self) -> int:
        return len(self.requests)

    @property
    def pending(self) -> int:
        """Replies not served yet."""
        return len(self._replies)

    def bodies(self) -> list[Any]:
        """The JSON bodies of the requests received so far."""
        return [r.json() for r in self.requests]

    def close(self) -> None:
        async def stop() -> None:
            assert self._server is not None
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    # -- server ----------------------------------------------------------------------

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def start() -> None:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)

        self._loop.run_until_complete(start())
        self._ready.set()
        self._loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        try:
            while True:  # keep-alive: several requests per connection
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if line:
                        name, _, value = line.partition(":")
                        headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0"))
                body = await reader.readexactly(length) if length else b""
                url = f"http://{headers.get('host', '127.0.0.1')}{target}"
                request = RecordedRequest(method, url, headers, body)
                with self._lock:
                    if self.keep_requests:
                        self.requests.append(request)
                    reply = self._replies.popleft() if self._replies else None
                if reply is None and self.responder is not None:
                    reply = self.responder(request)
                if reply is None:
                    reply = Reply(599, {"error": {"message": "no scripted reply left"}})
                if not await self._write(writer, reply):
                    return
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._tasks.discard(task)
            if not writer.transport.is_closing():
                writer.close()

    async def _write(self, writer: asyncio.StreamWriter, reply: Reply) -> bool:
        """Send one reply; False when the connection was dropped on purpose."""
        if reply.first_byte_delay:
            await asyncio.sleep(reply.first_byte_delay)
        reason = _REASONS.get(reply.status, "Status")
        head = [f"HTTP/1.1 {reply.status} {reason}"]
        headers = {"content-type": "application/json", **reply.headers}
        if reply.chunks is None:
            body = reply.body_bytes()
            headers["content-length"] = str(len(body))
        else:
            headers["transfer-encoding"] = "chunked"
        head += [f"{k}: {v}" for k, v in headers.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        if reply.chunks is None:
            writer.write(body)
            await writer.drain()
            return True
        await writer.drain()
        for number, chunk in enumerate(reply.chunks):
            if reply.drop_after is not None and number >= reply.drop_after:
                writer.transport.abort()  # connection reset mid-stream
                return False
            if reply.chunk_delay:
                await asyncio.sleep(reply.chunk_delay)
            if chunk:
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await writer.drain()
        if reply.drop_after is not None:
            writer.transport.abort()
            return False
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True
