"""Record and replay provider HTTP traffic, for notebooks that re-execute without a key.

::

    agent = Agent("openai:gpt-4o-mini", record="run.jsonl")   # live, traffic saved
    agent = Agent("openai:gpt-4o-mini", replay="run.jsonl")   # no key, no network

Both work as an ``httpx`` transport under the provider's ``http_client``, so every
adapter is covered without knowing about it. A recording is JSON Lines, one
exchange per line: the request (method, URL, headers with keys redacted, body)
and the whole response (status, headers, body; a streamed body is kept whole).

Replay answers each request from the recording whose *normalised request*
matches: method, path, query (minus key-like parameters) and the JSON body with
its keys sorted (call ids nbagent invented, which are random, numbered by order
of appearance); headers and host are ignored. Identical requests are answered in
recorded order (the last answer repeats once they run out). A request with no
match raises :class:`~nbagent.errors.ReplayMissError` naming where it differs
from the nearest recorded request, or goes to the live model with
``replay_fallback=True``.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import re
import threading
import time
import weakref
import zlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from ._internal.private_files import make_private_folder, open_private
from ._internal.redaction import REDACTED, scrub, scrub_stream  # one redaction for every output
from .errors import ConfigError, ReplayMissError
from .providers import invented_id_patterns, secret_headers

__all__ = [
    "RecordingTransport",
    "ReplayTransport",
    "http_client",
    "request_key",
]

FORMAT_VERSION = 1
# Secret headers come from the providers (each adapter names those that carry its key).
SECRET_PARAMS = frozenset({"key", "api_key", "apikey", "access_token", "token"})
# Recorded bodies are stored decoded; these headers would then lie about them.
_BODY_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


# -- building a client ----------------------------------------------------------------


def http_client(
    *,
    record: str | os.PathLike[str] | None = None,
    replay: str | os.PathLike[str] | None = None,
    replay_fallback: bool = False,
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` that records to ``record`` and/or replays from ``replay``.

    Pass it to a provider (``OpenAIProvider(model, http_client=...)``); ``Agent(record=,
    replay=)`` does this for you.
    """
    from .providers.http import DEFAULT_TIMEOUT

    if record is None and replay is None:
        raise ConfigError("http_client() needs record= or replay=")
    # Read the recording before a recorder may start a file at the same path.
    replayer = None if replay is None else ReplayTransport(replay)
    live: httpx.AsyncBaseTransport = _LiveTransport()
    recorder = None
    if record is not None:
        # Recording to the file being replayed extends it with the misses.
        extend = replayer is not None and replayer.path.resolve() == Path(record).resolve()
        live = recorder = RecordingTransport(record, live, append=extend)
    transport: httpx.AsyncBaseTransport = live
    if replayer is not None:
        replayer.fallback = live if replay_fallback else None
        transport = replayer
    client = httpx.AsyncClient(transport=transport, timeout=DEFAULT_TIMEOUT)
    if recorder is not None:
        _recorders[client] = recorder
    return client


_recorders: weakref.WeakKeyDictionary[httpx.AsyncClient, RecordingTransport]
_recorders = weakref.WeakKeyDictionary()


async def settle(client: Any, timeout: float = 1.0) -> None:
    """Wait until the responses ``client`` is recording are saved (the Agent calls this).

    Adapters often stop reading a stream at its end marker and leave closing the
    response to garbage collection, a moment later; this makes a run's last
    exchange reach the file before the run returns.
    """
    recorder = _recorders.get(client) if isinstance(client, httpx.AsyncClient) else None
    if recorder is None:
        return
    deadline = time.monotonic() + timeout
    while recorder.open_responses and time.monotonic() < deadline:
        await asyncio.sleep(0.002)


class _LiveTransport(httpx.AsyncBaseTransport):
    """The network, as a plain ``httpx.AsyncClient`` would reach it.

    Sending through a client (one per event loop) keeps what a bare transport
    would lose: proxies and certificates from the environment. Pooled connections
    never cross loops (nbagent's background loop and the kernel's own).
    """

    def __init__(self) -> None:
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient]
        self._clients = weakref.WeakKeyDictionary()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            client = self._clients[loop] = httpx.AsyncClient()
        # The request already carries the caller's timeout in its extensions.
        response = await client.send(request, stream=True)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=response.stream,
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()


# -- normalising requests -----------------------------------------------------------------


def normalise_request(method: str, url: httpx.URL, body: bytes) -> dict[str, Any]:
    """What identifies a request for replay: method, path, sorted query, parsed body.

    The body is redacted first, as in the recording (which never holds a key).
    """
    query = sorted(_redacted_params(url))
    if body:
        try:
            body = scrub(body.decode("utf-8")).encode("utf-8")
        except UnicodeDecodeError:
            pass
    return {
        "method": method.upper(),
        "path": url.path,
        "query": [list(pair) for pair in query],
        "body": _number_invented_ids(_parse_body(body), {}, _invented_ids()),
    }


def _invented_ids() -> re.Pattern[str]:
    """The call ids providers make up when a server sends none (Ollama, some servers).

    They are random in every run, so a replay matches them by order of appearance.
    """
    patterns = invented_id_patterns()  # re caches the compiled pattern
    return re.compile("|".join(f"(?:{p})" for p in patterns) or "(?!)")  # (?!): no match


def _number_invented_ids(value: Any, seen: dict[str, str], invented: re.Pattern[str]) -> Any:
    if isinstance(value, str):
        if invented.fullmatch(value):
            return seen.setdefault(value, f"<invented id {len(seen) + 1}>")
        return value
    if isinstance(value, dict):
        return {k: _number_invented_ids(v, seen, invented) for k, v in value.items()}
    if isinstance(value, list):
        return [_number_invented_ids(v, seen, invented) for v in value]
    return value


def request_key(normalised: dict[str, Any]) -> str:
    """A hash of a normalised request (JSON with sorted keys, so key order never matters)."""
    text = json.dumps(normalised, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _parse_body(body: bytes) -> Any:
    if not body:
        return None
    try:
        return json.loads(body)
    except ValueError:
        try:
            return {"text": body.decode("utf-8")}
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(body).decode("ascii")}


def _redact_headers(headers: httpx.Headers) -> dict[str, str]:
    secret = secret_headers()
    return {
        name: REDACTED if name.lower() in secret else value for name, value in headers.multi_items()
    }


def _redacted_params(url: httpx.URL) -> list[tuple[str, str]]:
    """The query parameters with key-like values replaced (recorded URLs and replay keys)."""
    return [(k, REDACTED if k.lower() in SECRET_PARAMS else v) for k, v in url.params.multi_items()]


def _redact_url(url: httpx.URL) -> str:
    params = _redacted_params(url)
    return str(url.copy_with(params=params) if params else url)


# -- recording -------------------------------------------------------------------------------

# Paths recorded to by this process: the first recorder of a path starts the file
# afresh (re-running a notebook re-records it); later ones in the same kernel append.
_started: set[Path] = set()
_file_lock = threading.Lock()


class RecordingTransport(httpx.AsyncBaseTransport):
    """Passes requests to ``inner`` and appends each exchange to ``path``.

    The first recorder of a path in a process starts the file afresh, unless
    ``append`` (used when recording the misses of a replay into the same file).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        inner: httpx.AsyncBaseTransport,
        *,
        append: bool = False,
    ) -> None:
        self.path = Path(path).expanduser().resolve()
        self.inner = inner
        self.open_responses = 0
        """Responses passed on whose exchange is not saved yet (see :func:`settle`)."""
        with _file_lock:
            if append:
                _started.add(self.path)
            if self.path not in _started:
                make_private_folder(self.path.parent)  # 0700, the file 0600: it holds prompts
                open_private(self.path, "w").close()
                _started.add(self.path)

    def __repr__(self) -> str:
        return f"RecordingTransport({str(self.path)!r})"

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Pass the request on; its exchange is saved once the response is closed."""
        body = await request.aread()
        started = time.perf_counter()
        response = await self.inner.handle_async_request(request)
        entry = {
            "version": FORMAT_VERSION,
            "request": {
                "method": request.method,
                "url": _redact_url(request.url),
                "headers": _redact_headers(request.headers),
                "body": _parse_body(body),
            },
            "key": request_key(normalise_request(request.method, request.url, body)),
        }
        self.open_responses += 1

        def on_close(raw: bytes, complete: bool) -> None:
            self.open_responses -= 1
            self._save(entry, response, raw, complete, started)

        tee = _Tee(response.stream, on_close)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=tee,
            extensions=response.extensions,
        )

    def _save(
        self,
        entry: dict[str, Any],
        response: httpx.Response,
        raw: bytes,
        complete: bool,
        started: float,
    ) -> None:
        body, encoding = _decode_body(raw, response.headers.get("content-encoding", ""))
        headers = _redact_headers(response.headers)
        if encoding != "raw":
            headers = {k: v for k, v in headers.items() if k.lower() not in _BODY_HEADERS}
        if isinstance(body, str):
            body = scrub_stream(body)  # a key streamed a few characters per event
        entry["response"] = {
            "status": response.status_code,
            "headers": headers,
            "body": body,
            "body_encoding": "base64" if encoding == "raw" else "text",
            "complete": complete,
        }
        entry["duration_s"] = round(time.perf_counter() - started, 4)
        # Bodies too: a server echoing the key, a prompt or a tool argument holding it.
        line = scrub(json.dumps(entry, ensure_ascii=False)) + "\n"
        with _file_lock, open_private(self.path, "a") as file:
            file.write(line)

    async def aclose(self) -> None:
        """Close the transport requests were passed to."""
        await self.inner.aclose()


class _Tee(httpx.AsyncByteStream):
    """Streams the body through unchanged and hands all of it over when it is closed.

    Clients often stop reading at their end marker (``data: [DONE]``) before the
    stream reports its end, so closing first drains what the server already sent
    (briefly: a run cancelled mid-answer must not wait for the rest). What the
    client read is recorded either way, flagged ``complete`` or not.
    """

    DRAIN_S = 0.25

    def __init__(self, inner: Any, on_close: Callable[[bytes, bool], None]) -> None:
        self._inner = inner
        self._on_close = on_close
        self._chunks: list[bytes] = []
        self._iterator: AsyncIterator[bytes] | None = None
        self._complete = False
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        self._iterator = self._inner.__aiter__()
        while True:
            try:
                chunk = await self._iterator.__anext__()
            except StopAsyncIteration:
                self._complete = True
                return
            self._chunks.append(chunk)
            yield chunk

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if not self._complete and self._iterator is not None:
                await self._drain(self._iterator)
            self._on_close(b"".join(self._chunks), self._complete)
        finally:
            await self._inner.aclose()

    async def _drain(self, iterator: AsyncIterator[bytes]) -> None:
        async def rest() -> None:
            async for chunk in iterator:
                self._chunks.append(chunk)
            self._complete = True

        try:
            await asyncio.wait_for(rest(), self.DRAIN_S)
        except (asyncio.TimeoutError, httpx.HTTPError, OSError):
            pass


def _decode_body(raw: bytes, content_encoding: str) -> tuple[str, str]:
    """The body as text when possible (gzip/deflate undone), else base64 of the raw bytes."""
    data = raw
    encoding = content_encoding.strip().lower()
    try:
        if encoding in ("gzip", "x-gzip"):
            data = zlib.decompress(raw, 16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            try:
                data = zlib.decompress(raw)
            except zlib.error:
                data = zlib.decompress(raw, -zlib.MAX_WBITS)
        elif encoding not in ("", "identity"):
            return base64.b64encode(raw).decode("ascii"), "raw"
        return data.decode("utf-8"), "text"
    except (zlib.error, UnicodeDecodeError):
        return base64.b64encode(raw).decode("ascii"), "raw"


# -- replay ----------------------------------------------------------------------------------


@dataclass
class _Recorded:
    line: int
    normalised: dict[str, Any]
    status: int
    headers: list[tuple[str, str]]
    body: bytes


class ReplayTransport(httpx.AsyncBaseTransport):
    """Answers requests from a recording; a miss raises ReplayMissError or goes to ``fallback``."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        fallback: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.path = Path(path).expanduser()
        self.fallback = fallback
        self.entries = _load(self.path)
        self._by_key: dict[str, list[_Recorded]] = {}
        for recorded in self.entries:
            self._by_key.setdefault(request_key(recorded.normalised), []).append(recorded)
        self._used: dict[str, int] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ReplayTransport({str(self.path)!r}, {len(self.entries)} exchanges)"

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """The recorded response to this request (or the fallback's, or ReplayMissError)."""
        body = await request.aread()
        normalised = normalise_request(request.method, request.url, body)
        key = request_key(normalised)
        with self._lock:
            candidates = self._by_key.get(key)
            if candidates:
                index = self._used.get(key, 0)
                self._used[key] = index + 1
                recorded = candidates[min(index, len(candidates) - 1)]
            else:
                recorded = None
        if recorded is not None:
            return httpx.Response(
                recorded.status,
                headers=recorded.headers,
                content=recorded.body,
                extensions={"nbagent_replay_line": recorded.line},
            )
        if self.fallback is not None:
            return await self.fallback.handle_async_request(request)
        raise ReplayMissError(explain_miss(normalised, self.entries, self.path))

    async def aclose(self) -> None:
        """Close the fallback transport, if any."""
        if self.fallback is not None:
            await self.fallback.aclose()


def _load(path: Path) -> list[_Recorded]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"replay: no recording at {path}") from None
    entries = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            request, response = data["request"], data["response"]
            url = httpx.URL(request["url"])
            body = request.get("body")
            raw_body = b"" if body is None else _body_bytes(body)
            raw = response.get("body", "")
            content = (
                base64.b64decode(raw)
                if response.get("body_encoding") == "base64"
                else raw.encode("utf-8")
            )
            entries.append(
                _Recorded(
                    number,
                    normalise_request(request["method"], url, raw_body),
                    int(response["status"]),
                    list(response.get("headers", {}).items()),
                    content,
                )
            )
        except (ValueError, KeyError, TypeError) as error:
            message = f"replay: {path} line {number} is not a recorded exchange: {error}"
            raise ConfigError(message) from None
    return entries


def _body_bytes(body: Any) -> bytes:
    """Undo :func:`_parse_body` (the exact bytes do not matter: only their normal form)."""
    if isinstance(body, dict) and set(body) == {"text"}:
        return str(body["text"]).encode("utf-8")
    if isinstance(body, dict) and set(body) == {"base64"}:
        return base64.b64decode(body["base64"])
    return json.dumps(body).encode("utf-8")


# -- explaining a miss -------------------------------------------------------------------------


def explain_miss(normalised: dict[str, Any], entries: list[_Recorded], path: Path) -> str:
    """Why no recording matched: where the request differs from the nearest recorded one."""
    where = f"{normalised['method']} {normalised['path']}"
    if not entries:
        return f"replay: {path} holds no exchanges, so nothing answers {where}."
    scored = []
    for recorded in entries:
        differences = _differences(recorded.normalised, normalised, "")
        scored.append((len(differences), recorded.line, differences))
    count, line, differences = min(scored, key=lambda item: (item[0], item[1]))
    shown = "; ".join(_describe(d) for d in differences[:3])
    more = f" (and {count - 3} more differences)" if count > 3 else ""
    return (
        f"replay: no recorded response in {path} for this {where} request. "
        f"Nearest recorded request (line {line}) differs at {shown}{more}. "
        "Re-record with record=, or pass replay_fallback=True to ask the live model."
    )


def _differences(old: Any, new: Any, path: str) -> list[tuple[str, Any, Any]]:
    if isinstance(old, dict) and isinstance(new, dict):
        found: list[tuple[str, Any, Any]] = []
        for key in sorted(set(old) | set(new), key=str):
            child = f"{path}.{key}" if path else str(key)
            if key not in old:
                found.append((child, _MISSING, new[key]))
            elif key not in new:
                found.append((child, old[key], _MISSING))
            else:
                found += _differences(old[key], new[key], child)
        return found
    if isinstance(old, list) and isinstance(new, list):
        found = []
        for index in range(min(len(old), len(new))):
            found += _differences(old[index], new[index], f"{path}[{index}]")
        if len(old) != len(new):
            found.append((path, _Length(len(old)), _Length(len(new))))
        return found
    return [] if old == new else [(path, old, new)]


class _Missing:
    def __repr__(self) -> str:
        return "(absent)"


_MISSING = _Missing()


@dataclass
class _Length:
    items: int

    def __repr__(self) -> str:
        return f"{self.items} items"


def _describe(difference: tuple[str, Any, Any]) -> str:
    path, old, new = difference
    return f"{path or 'the request'}: recorded {_short(old)}, now {_short(new)}"


def _short(value: Any) -> str:
    if isinstance(value, (_Missing, _Length)):
        return repr(value)
    rendered = json.dumps(value, ensure_ascii=False, default=str)
    return rendered if len(rendered) <= 80 else rendered[:77] + "…"
