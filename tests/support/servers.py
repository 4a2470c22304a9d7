"""One fake server for every wire format, and per-API reply builders.

:class:`WireServer` is a real HTTP/1.1 server on 127.0.0.1, on its own event loop
in a daemon thread, so the code under test talks to it over a real socket from
any loop (pytest-asyncio's, nbagent's background loop). It serves scripted
replies strictly in order, one per request, then asks ``responder`` (if any)::

    server = WireServer()                       # or the ``wire_server`` fixture
    server.add(Reply(429, {"error": {"message": "slow down"}}, headers={"retry-after": "0"}))
    server.add(OpenAI.call_stream(("call_1", "add", '{"a": 1, "b": 2}')))
    server.add(OpenAI.text_stream("It is 3."))
    agent = http_agent("openai:gpt-test", server, tools=[add])    # tests/support/agents.py
    ...
    server.requests        # what the client sent: RecordedRequest(method, url, headers, body)
    server.bodies()        # their JSON bodies
    server.count           # number of requests received

    WireServer(responder=lambda request: Reply(...))   # decide each reply from the request

The reply builders speak each API: :class:`OpenAI` (Chat Completions SSE and
JSON), :class:`Anthropic` (Messages SSE), :class:`Gemini` (GenerateContent
chunks), :class:`Ollama` (``/api/chat`` NDJSON lines). ``Reply.sse`` and
``Reply.ndjson`` frame any payloads; ``replies_for`` in ``tests/support/cassettes.py``
serves a recording; ``ScriptedReplies`` in ``tests/support/scripted.py`` answers
like a deterministic model in the Chat Completions or Ollama format.

Fault injection on a Reply: ``first_byte_delay`` (seconds before the status
line), ``chunk_delay`` (between body chunks), ``drop_after`` (abort the socket
after that many body chunks: a connection reset mid-stream), ``reset`` (abort
before the status line), ``chunks`` (the body
pieces, sent with chunked transfer-encoding so the client sees them one by one).
A request with no reply left (and no responder) gets HTTP 599 ``{"error":
{"message": "no scripted reply left"}}`` so a test fails loudly instead of hanging.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit


@dataclass
class RecordedRequest:
    """A request as the server received it (or as a cassette recorded it)."""

    method: str
    url: str
    headers: dict[str, str]
    body: bytes

    @property
    def path(self) -> str:
        """Path and query of the URL (``/v1/chat/completions?alt=sse``)."""
        parts = urlsplit(self.url)
        return parts.path + (f"?{parts.query}" if parts.query else "")

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass
class RecordedResponse:
    """A response from a cassette: status, headers (lower case) and the decoded body."""

    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")

    @property
    def is_stream(self) -> bool:
        """True for SSE / NDJSON bodies (served chunked by the replay server)."""
        ct = self.content_type
        return "event-stream" in ct or "ndjson" in ct

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


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
    reset: bool = False
    """Abort the connection before the status line (a reset before the first byte)."""

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
        """Stop serving (closing twice is fine: a test may close before its fixture does)."""
        if self._loop.is_closed():
            return

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
        if reply.reset:
            writer.transport.abort()
            return False
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


class ServerProcess:
    """A :class:`WireServer` answering with ``responder`` in a process of its own.

    For benchmarks: the server never competes with the client for the GIL. The
    process is forked, so ``responder`` may be any function. ``url`` is its base URL.
    """

    def __init__(self, responder: Callable[[RecordedRequest], Reply]) -> None:
        context = multiprocessing.get_context("fork")
        self._parent, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, responder), daemon=True)
        self._process.start()
        self.url: str = self._parent.recv()

    def close(self) -> None:
        """Stop the server (closing the pipe ends it) and wait for its process."""
        self._parent.close()
        self._process.join(5)
        if self._process.is_alive():
            self._process.terminate()


def _serve(conn: Any, responder: Callable[[RecordedRequest], Reply]) -> None:
    """The server process: a WireServer that records nothing, until the pipe closes."""
    server = WireServer(responder=responder)
    server.keep_requests = False
    conn.send(server.url)
    try:
        conn.recv()
    except EOFError:  # the parent closed its end
        pass
    server.close()


# --------------------------------------------------------------------------- reply builders


class OpenAI:
    """Chat Completions replies: streamed chunks (SSE) or one ``chat.completion``."""

    USAGE = {
        "id": "chatcmpl-1",
        "choices": [],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7},
    }
    """The usage chunk a stream ends with (``stream_options.include_usage``)."""

    @staticmethod
    def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict:
        """One ``chat.completion.chunk`` with one choice."""
        choice = {"index": 0, "delta": delta or {}, "finish_reason": finish}
        return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [choice], **extra}

    @staticmethod
    def tool_delta(
        index: int, *, id: str | None = None, name: str | None = None, args: str = ""
    ) -> dict:
        """A delta carrying one tool-call fragment (the first one names the call)."""
        item: dict[str, Any] = {"index": index, "function": {"arguments": args}}
        if id:
            item.update(id=id, type="function")
            item["function"]["name"] = name
        return {"tool_calls": [item]}

    @classmethod
    def text_stream(cls, text: str, *, piece: int = 4) -> Reply:
        """A streamed answer in ``piece``-character chunks, usage, ``[DONE]``."""
        pieces = [text[i : i + piece] for i in range(0, len(text), piece)]
        events: list[Any] = [cls.chunk({"role": "assistant", "content": ""})]
        events += [cls.chunk({"content": p}) for p in pieces]
        events += [cls.chunk(finish="stop"), cls.USAGE, "[DONE]"]
        return Reply.sse(events)

    @classmethod
    def call_stream(cls, *calls: tuple[str, str, str], finish: str = "tool_calls") -> Reply:
        """A streamed reply asking for ``calls`` (id, name, arguments), arguments in 2 pieces."""
        events: list[Any] = [cls.chunk({"role": "assistant", "content": None})]
        for index, (call_id, name, args) in enumerate(calls):
            half = len(args) // 2
            events.append(cls.chunk(cls.tool_delta(index, id=call_id, name=name)))
            events += [
                cls.chunk(cls.tool_delta(index, args=args[:half])),
                cls.chunk(cls.tool_delta(index, args=args[half:])),
            ]
        events += [cls.chunk(finish=finish), cls.USAGE, "[DONE]"]
        return Reply.sse(events)

    @staticmethod
    def completion(
        text: str | None = None,
        calls: list[tuple[str, str, str]] = (),  # type: ignore[assignment]
        *,
        usage: tuple[int, int] = (5, 3),
    ) -> dict:
        """A whole ``chat.completion`` body: ``text`` and/or ``calls`` (id, name, arguments)."""
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            message["tool_calls"] = [
                {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                for i, n, a in calls
            ]
        finish = "tool_calls" if calls else "stop"
        return {
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]},
        }

    @classmethod
    def text_reply(cls, text: str) -> Reply:
        """A non-streamed answer."""
        return Reply(200, cls.completion(text))


class Anthropic:
    """Messages API replies: named SSE events, errors."""

    @staticmethod
    def event(kind: str, **fields: Any) -> tuple[str, dict]:
        """One named SSE event whose payload repeats the name in ``type``."""
        return kind, {"type": kind, **fields}

    @classmethod
    def delta(cls, index: int, kind: str, **fields: Any) -> tuple[str, dict]:
        """A ``content_block_delta`` of ``kind`` (``text_delta``, ``input_json_delta``...)."""
        return cls.event("content_block_delta", index=index, delta={"type": kind, **fields})

    @classmethod
    def stream(
        cls,
        text: str = "",
        calls: list[tuple[str, str, str]] = (),  # type: ignore[assignment]
        *,
        stop: str | None = None,
        usage: tuple[int, int] = (11, 7),
        end: bool = True,
        extra_events: list = (),  # type: ignore[assignment]
        **options: Any,
    ) -> Reply:
        """A Messages stream: an optional text block, tool_use blocks (id, name, argument
        JSON split in two deltas), message_delta and (unless ``end=False``) message_stop."""
        stop = stop or ("tool_use" if calls else "end_turn")
        message = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "claude-test",
            "stop_reason": None,
            "usage": {"input_tokens": usage[0], "output_tokens": 1},
        }
        events: list = [("message_start", {"type": "message_start", "message": message})]
        index = 0
        if text:
            half = len(text) // 2
            events += [
                cls.event(
                    "content_block_start", index=0, content_block={"type": "text", "text": ""}
                ),
                cls.event("ping"),
                cls.delta(0, "text_delta", text=text[:half]),
                cls.delta(0, "text_delta", text=text[half:]),
                cls.event("content_block_stop", index=0),
            ]
            index = 1
        for call_id, name, arguments in calls:
            block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
            half = len(arguments) // 2
            events += [
                cls.event("content_block_start", index=index, content_block=block),
                cls.delta(index, "input_json_delta", partial_json=""),
                cls.delta(index, "input_json_delta", partial_json=arguments[:half]),
                cls.delta(index, "input_json_delta", partial_json=arguments[half:]),
                cls.event("content_block_stop", index=index),
            ]
            index += 1
        events += list(extra_events)
        delta = {"stop_reason": stop, "stop_sequence": None}
        events.append(cls.event("message_delta", delta=delta, usage={"output_tokens": usage[1]}))
        if end:
            events.append(cls.event("message_stop"))
        return Reply.sse(events, **options)

    @staticmethod
    def error(status: int, error_type: str, message: str, **options: Any) -> Reply:
        """An error response (``{"type": "error", "error": {...}}``)."""
        body = {
            "type": "error",
            "error": {"type": error_type, "message": message},
            "request_id": "req_1",
        }
        return Reply(status, body, **options)


class Gemini:
    """GenerateContent replies: response chunks (SSE), function-call parts, errors."""

    @staticmethod
    def chunk(
        *parts: dict, finish: str | None = None, usage: tuple[int, int] | None = None
    ) -> dict:
        """One GenerateContentResponse with one candidate holding ``parts``."""
        candidate: dict = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        data: dict = {"candidates": [candidate], "modelVersion": "gemini-test"}
        if usage:
            data["usageMetadata"] = {
                "promptTokenCount": usage[0],
                "candidatesTokenCount": usage[1],
                "totalTokenCount": sum(usage),
            }
        return data

    @staticmethod
    def call_part(
        name: str, signature: str | None = None, call_id: str | None = None, **args: Any
    ) -> dict:
        """A ``functionCall`` part (with a thoughtSignature and an id when given)."""
        call: dict = {"name": name, "args": args}
        if call_id:
            call["id"] = call_id
        part: dict = {"functionCall": call}
        if signature:
            part["thoughtSignature"] = signature
        return part

    @classmethod
    def text_stream(cls, text: str, usage: tuple[int, int] = (12, 4), **options: Any) -> Reply:
        """A streamed answer in two chunks; the last carries finishReason (no terminator)."""
        half = len(text) // 2
        first = cls.chunk({"text": text[:half]})
        last = cls.chunk({"text": text[half:]}, finish="STOP", usage=usage)
        return Reply.sse([first, last], **options)

    @staticmethod
    def error(
        status: int, kind: str, message: str, details: list | None = None, **options: Any
    ) -> Reply:
        """An error response (``{"error": {"code", "message", "status", "details"}}``)."""
        body = {
            "error": {"code": status, "message": message, "status": kind, "details": details or []}
        }
        return Reply(status, body, **options)


class Ollama:
    """``/api/chat`` lines: text, a tool call, the final ``done`` line."""

    @staticmethod
    def done(**extra: Any) -> dict[str, Any]:
        """The last line: done, with token counts."""
        return {
            "model": "qwen3",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 20,
            "eval_count": 4,
            **extra,
        }

    @staticmethod
    def text_chunks(text: str) -> list[dict[str, Any]]:
        """``text`` in 3-character lines."""
        return [
            {"model": "qwen3", "message": {"role": "assistant", "content": text[i : i + 3]},
             "done": False}
            for i in range(0, len(text), 3)
        ]  # fmt: skip

    @staticmethod
    def call_chunk(name: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
        """A line carrying one tool call (no id, as Ollama sends them)."""
        return {
            "model": "qwen3",
            "message": {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"name": name, "arguments": arguments, **extra}}],
            },
            "done": False,
        }
