"""The HTTP layer shared by every adapter: clients, retries, errors, SSE and NDJSON.

An adapter builds one :class:`HttpSession` and calls one of three methods::

    http = HttpSession(
        "anthropic",
        base_url="https://api.anthropic.com",
        headers={"x-api-key": key, "anthropic-version": "2023-06-01"},
        secrets=[key],                      # redacted from every error text
        auth_hint="Set ANTHROPIC_API_KEY or pass api_key=...",
        http_client=http_client, max_retries=max_retries, timeout=timeout,
    )
    data = await http.post_json("/v1/messages", body)          # one JSON reply
    async for event, payload in http.stream_sse("/v1/messages", body):
        ...   # payload: parsed JSON, or the raw text when it is not JSON ("[DONE]")
    async for obj in http.stream_ndjson("/api/chat", body):
        ...   # one parsed JSON value per line
    await http.aclose()

``stream_sse_batches`` / ``stream_ndjson_batches`` give the same items as one list
per network read, so an adapter can join a read's text into one TextChunk (fewer
events for the loop and the UI; this is what the OpenAI and Ollama adapters do).

What the session does for the adapter:

* **Clients.** One ``httpx.AsyncClient`` per event loop: the same provider may be
  used from nbagent's background loop thread and from the Jupyter kernel's loop,
  and an AsyncClient must never cross loops. A caller's ``http_client=`` is used
  as-is for every loop (their responsibility).
* **Retries** before the first response byte only: 408, 409, 429, 5xx (incl. 529)
  and connection failures / timeouts, with exponential backoff and jitter,
  honouring ``x-should-retry``, ``retry-after-ms``, ``retry-after`` and Gemini's
  ``RetryInfo.retryDelay``. A 429 whose error says the quota or credit is
  exhausted is never retried. Once a stream has started nothing is retried
  (text may already be on screen).
* **Errors.** Every failure becomes :class:`~nbagent.errors.ProviderError` with the
  provider's own message (OpenAI, vLLM, Anthropic, Gemini and Ollama error bodies
  are all understood). The error body is read even when streaming. A 401 adds
  ``auth_hint``. Payloads carrying an ``error`` key after a 200 (mid-stream
  errors) raise too, as do malformed chunks and dropped connections.
* **Secrets.** Every string in ``secrets`` is replaced by ``***`` in every error
  text; nothing here logs headers or bodies.

The parsers (:class:`SSEParser`, :class:`NDJSONParser`) are incremental and work on
raw bytes, so they can also be used on recorded bodies (tests, benchmarks).
"""

from __future__ import annotations

import asyncio
import codecs
import email.utils
import json
import logging
import random
import re
import threading
import time
import weakref
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic_core import from_json

from ..errors import ProviderError

logger = logging.getLogger("nbagent.providers")

__all__ = [
    "DEFAULT_TIMEOUT",
    "HttpSession",
    "NDJSONParser",
    "SSEEvent",
    "SSEParser",
    "error_from_body",
    "join_url",
]

DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=10.0)
"""Generous read timeout (reasoning models think long before the first byte)."""

RETRY_STATUSES = frozenset({408, 409, 429})
MAX_RETRY_WAIT_S = 120.0
"""A server asking us to wait longer than this is not retried (we report its message)."""

# Codes / phrases that mean "retrying will not help" on a 429.
_QUOTA_CODES = frozenset(
    {
        "insufficient_quota",
        "credit_balance_exhausted",
        "billing_hard_limit_reached",
        "billing_not_active",
        "quota_exceeded",
    }
)
_QUOTA_TEXT = re.compile(
    r"insufficient[_ ]quota|credit balance|billing|exceeded your current quota|quota exhausted",
    re.IGNORECASE,
)


def join_url(base_url: str, path: str) -> str:
    """``join_url("http://h/v1/", "/chat/completions")`` -> ``"http://h/v1/chat/completions"``."""
    if not path:
        return base_url
    return base_url.rstrip("/") + "/" + path.lstrip("/")


# --------------------------------------------------------------------------- parsing


@dataclass(slots=True)
class SSEEvent:
    """One Server-Sent Event: its ``event:`` name ("" when absent) and joined ``data:``."""

    event: str
    data: str


class SSEParser:
    """Incremental Server-Sent Events parser (WHATWG framing).

    Feed raw bytes in any split; get complete events back. Events end at a blank
    line (``\\n\\n``, ``\\r\\n\\r\\n`` or ``\\r\\r``); several ``data:`` lines are joined
    with ``\\n``; one space after the colon is dropped; ``:`` comments, ``id:``,
    ``retry:`` and unknown fields are ignored.
    """

    __slots__ = ("_decoder", "_buffer", "_held_cr")

    def __init__(self) -> None:
        # "utf-8-sig" drops a byte-order mark at the start of the stream, as the spec asks.
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
        self._buffer = ""
        self._held_cr = False

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        text = self._decoder.decode(chunk)
        if self._held_cr:
            text = "\r" + text
            self._held_cr = False
        if "\r" in text:
            # A "\r\n" may be split across chunks: keep a trailing "\r" for later.
            if text.endswith("\r"):
                text = text[:-1]
                self._held_cr = True
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        buffer = self._buffer + text if self._buffer else text
        if "\n\n" not in buffer:
            self._buffer = buffer
            return []
        blocks = buffer.split("\n\n")
        self._buffer = blocks.pop()
        events = []
        for block in blocks:
            event = _parse_block(block)
            if event is not None:
                events.append(event)
        return events

    def close(self) -> list[SSEEvent]:
        """The event left without its closing blank line, if any (lenient on purpose)."""
        rest = self._buffer + self._decoder.decode(b"", final=True)
        self._buffer = ""
        self._held_cr = False
        event = _parse_block(rest.replace("\r\n", "\n").replace("\r", "\n").strip("\n"))
        return [event] if event is not None else []


def _parse_block(block: str) -> SSEEvent | None:
    # Fast paths: a single "data: {...}" line (OpenAI, Gemini) and an
    # "event: name" line plus one "data:" line (Anthropic).
    if block.startswith("data: "):
        if "\n" not in block:
            return SSEEvent("", block[6:])
    elif block.startswith("event: "):
        end = block.find("\n")
        if end > 0 and block.startswith("data: ", end + 1) and block.find("\n", end + 1) < 0:
            return SSEEvent(block[7:end], block[end + 7 :])
    name = ""
    data: list[str] = []
    for line in block.split("\n"):
        if not line or line[0] == ":":
            continue
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "event":
            name = value
    if not data:
        return None  # per spec an event without data is not dispatched
    return SSEEvent(name, "\n".join(data))


class NDJSONParser:
    """Incremental newline-delimited JSON parser: feed bytes, get parsed values.

    JSON is decoded by pydantic-core (already a dependency), about 3x faster than
    the standard library on the small objects streams are made of.

    Raises ``ValueError`` on a malformed line (the session turns it into a
    ProviderError naming the provider).
    """

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = b""

    def lines(self, chunk: bytes) -> list[bytes]:
        """The complete, non-blank lines that ``chunk`` finishes (not yet parsed)."""
        buffer = self._buffer + chunk if self._buffer else chunk
        if b"\n" not in buffer:
            self._buffer = buffer
            return []
        lines = buffer.split(b"\n")
        self._buffer = lines.pop()
        return [line for line in lines if line.strip()]

    def close_lines(self) -> list[bytes]:
        """The last line when the stream ended without a newline."""
        rest, self._buffer = self._buffer, b""
        return [rest] if rest.strip() else []

    def feed(self, chunk: bytes) -> list[Any]:
        return [from_json(line) for line in self.lines(chunk)]

    def close(self) -> list[Any]:
        return [from_json(line) for line in self.close_lines()]


# --------------------------------------------------------------------------- errors


def error_from_body(
    provider: str, status: int | None, body: Any, *, default_message: str = ""
) -> tuple[str | None, str, float | None]:
    """``(error_type, message, retry_delay_s)`` from any provider's error body.

    Understands OpenAI ``{"error": {"message", "type", "code"}}``, vLLM's flat
    ``{"object": "error", "message", "type"}``, Anthropic ``{"type": "error",
    "error": {...}}``, Gemini ``{"error": {"status", "message", "details"}}`` (also
    wrapped in a list) and Ollama ``{"error": "text"}``. ``body`` may be bytes,
    text or parsed JSON.
    """
    if isinstance(body, bytes | str):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        try:
            body = json.loads(text)
        except ValueError:
            message = text.strip()[:1000] or default_message
            return None, message or f"HTTP {status}", None
    if isinstance(body, list) and body and isinstance(body[0], dict):
        body = body[0]
    if not isinstance(body, dict):
        return None, default_message or f"HTTP {status}", None
    err: Any = body.get("error", body)
    if isinstance(err, str):
        return body.get("type") if body.get("type") != "error" else None, err, None
    if not isinstance(err, dict):
        return None, default_message or json.dumps(body)[:1000], None
    message = err.get("message") or body.get("message") or default_message or json.dumps(err)
    code = err.get("code")
    error_type = err.get("status") or err.get("type") or (code if isinstance(code, str) else None)
    if isinstance(code, str) and error_type and code != error_type:
        error_type = f"{error_type}/{code}"
    retry_delay = None
    for detail in err.get("details") or []:
        if isinstance(detail, dict) and detail.get("retryDelay"):
            retry_delay = _parse_duration(str(detail["retryDelay"]))
    return error_type, str(message), retry_delay


def _parse_duration(text: str) -> float | None:
    """Gemini's protobuf Duration ("5s", "0.5s") in seconds."""
    try:
        return float(text.strip().rstrip("s"))
    except ValueError:
        return None


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds the server asked us to wait, from retry-after-ms or retry-after."""
    value = headers.get("retry-after-ms")
    if value:
        try:
            return float(value) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _quota_exhausted(error_type: str | None, message: str, has_delay: bool) -> bool:
    parts = set(re.split(r"[/\s]", (error_type or "").lower()))
    if parts & _QUOTA_CODES:
        return True
    # Gemini's per-minute quota 429 says "exceeded your current quota" but comes with
    # a retryDelay: that one is worth waiting for.
    return not has_delay and bool(_QUOTA_TEXT.search(message))


# --------------------------------------------------------------------------- session


class HttpSession:
    """HTTP for one provider instance. See the module docstring for usage.

    ``headers`` are sent with every request (auth goes here, never in the URL);
    ``secrets`` are redacted from every error text; ``timeout`` (seconds or an
    ``httpx.Timeout``) bounds connecting and the wait for each response byte.
    ``backoff`` is the first retry wait in seconds (doubled each time, capped at 8 s).
    """

    def __init__(
        self,
        provider: str,
        *,
        base_url: str,
        headers: Mapping[str, str] | None = None,
        secrets: Iterable[str | None] = (),
        auth_hint: str = "",
        http_client: httpx.AsyncClient | None = None,
        max_retries: int = 3,
        timeout: float | httpx.Timeout | None = None,
        backoff: float = 0.5,
    ) -> None:
        self.provider = provider
        self.base_url = base_url
        self._headers = {"content-type": "application/json", **dict(headers or {})}
        self._secrets = [s for s in secrets if s]
        self.auth_hint = auth_hint
        self.max_retries = max(0, int(max_retries))
        self.backoff = backoff
        if timeout is None:
            self.timeout = DEFAULT_TIMEOUT
        elif isinstance(timeout, httpx.Timeout):
            self.timeout = timeout
        else:
            self.timeout = httpx.Timeout(float(timeout))
        self._given_client = http_client
        self._lock = threading.Lock()
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:  # no headers: they hold the key
        return f"HttpSession({self.provider!r}, base_url={self.redact(self.base_url)!r})"

    # -- clients ---------------------------------------------------------------

    def client(self) -> httpx.AsyncClient:
        """The AsyncClient for the running event loop (created on first use)."""
        if self._given_client is not None:
            return self._given_client
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            with self._lock:  # two loop threads may ask at once
                # A client keeps its loop alive, so drop those of loops that are gone.
                for old in [lp for lp in self._clients if lp.is_closed()]:
                    del self._clients[old]
                client = httpx.AsyncClient(timeout=self.timeout)
                self._clients[loop] = client
        return client

    async def aclose(self) -> None:
        """Close the clients this session created (never a caller's ``http_client``)."""
        try:
            current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        for loop, client in list(self._clients.items()):
            if loop is current:
                await client.aclose()
            elif not loop.is_closed() and loop.is_running():
                # Close it on its own loop; an AsyncClient must not be used across loops.
                asyncio.run_coroutine_threadsafe(client.aclose(), loop)
        self._clients.clear()

    # -- redaction and errors ----------------------------------------------------

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by ``***``."""
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, "***")
        return text

    def error(
        self,
        status: int | None,
        error_type: str | None,
        message: str,
        *,
        retryable: bool = False,
    ) -> ProviderError:
        """A ProviderError for this provider with the secrets redacted."""
        if status == 401 and self.auth_hint:
            message = f"{message} ({self.auth_hint})"
        return ProviderError(
            self.provider,
            status,
            self.redact(error_type) if error_type else None,
            self.redact(message),
            retryable=retryable,
        )

    def error_from_payload(self, payload: Any, status: int | None = None) -> ProviderError:
        """The ProviderError for an error payload that arrived inside a 200 stream."""
        error_type, message, _ = error_from_body(self.provider, status, payload)
        if status is None and isinstance(payload, dict):
            err = payload.get("error")
            code = err.get("code") if isinstance(err, dict) else None
            status = code if isinstance(code, int) else None
        return self.error(status, error_type, f"error during the response: {message}")

    def check_payload(self, payload: Any) -> Any:
        """Raise if a parsed chunk/body is an error payload; return it otherwise."""
        if isinstance(payload, dict) and payload.get("error"):
            raise self.error_from_payload(payload)
        return payload

    # -- requests ----------------------------------------------------------------

    async def post_json(self, path: str, body: Any) -> Any:
        """POST ``body`` as JSON and return the parsed JSON reply (retries included)."""
        response = await self._send(path, body, read_body=True)
        try:
            data = from_json(response.content)
        except ValueError:
            snippet = response.text[:200]
            raise self.error(
                response.status_code, "malformed_response", f"reply is not JSON: {snippet!r}"
            ) from None
        return self.check_payload(data)

    async def stream_sse(self, path: str, body: Any) -> AsyncIterator[tuple[str, Any]]:
        """POST and yield ``(event_name, payload)`` per Server-Sent Event.

        ``payload`` is the parsed JSON of ``data:``, or the raw text when it does not
        look like JSON (e.g. ``"[DONE]"``). Error payloads raise ProviderError. The
        adapter decides whether the stream ended properly (terminator seen).
        """
        async for batch in self.stream_sse_batches(path, body):
            for item in batch:
                yield item

    async def stream_sse_batches(
        self, path: str, body: Any
    ) -> AsyncIterator[list[tuple[str, Any]]]:
        """:meth:`stream_sse`, one list per network read (fewer, larger steps: an
        adapter can join the text of a whole read into one TextChunk). Events before
        an error payload or a malformed chunk are yielded first, then it raises."""
        parser = SSEParser()
        loads = from_json
        # Kept until the first event: a server that ignores "stream" answers with
        # one plain JSON body, which is then yielded whole as ("", payload).
        head: bytearray | None = bytearray()
        async for chunk in self._stream_bytes(path, body):
            events = parser.close() if chunk is None else parser.feed(chunk)
            if head is not None:
                if events:
                    head = None
                elif chunk is not None:
                    head += chunk
                else:
                    whole = self._whole_json(bytes(head))
                    if whole is not None:
                        yield [("", whole)]
            if not events:
                continue
            batch: list[tuple[str, Any]] = []
            error: ProviderError | None = None
            for event in events:
                data = event.data
                first = data[:1]
                if first == "{" or (first == "[" and data != "[DONE]"):
                    try:
                        payload = loads(data)
                    except ValueError:
                        error = self.error(
                            None, "malformed_chunk", f"malformed chunk in stream: {data[:200]!r}"
                        )
                        break
                    if type(payload) is dict and payload.get("error"):
                        error = self.error_from_payload(payload)
                        break
                    batch.append((event.event, payload))
                else:
                    batch.append((event.event, data))
            if batch:
                yield batch
            if error is not None:
                raise error

    def _whole_json(self, raw: bytes) -> Any:
        """A stream body that was one JSON document instead of events (or None)."""
        if raw.lstrip()[:1] not in (b"{", b"["):
            return None
        try:
            payload = from_json(raw)
        except ValueError:
            return None
        if type(payload) is list and payload and type(payload[0]) is dict:
            self.check_payload(payload[0])  # Gemini wraps errors in a list
        return self.check_payload(payload)

    async def stream_ndjson(self, path: str, body: Any) -> AsyncIterator[Any]:
        """POST and yield one parsed JSON value per line. Error lines raise ProviderError."""
        async for batch in self.stream_ndjson_batches(path, body):
            for value in batch:
                yield value

    async def stream_ndjson_batches(self, path: str, body: Any) -> AsyncIterator[list[Any]]:
        """:meth:`stream_ndjson`, one list of values per network read (see
        :meth:`stream_sse_batches`)."""
        parser = NDJSONParser()
        async for chunk in self._stream_bytes(path, body):
            lines = parser.close_lines() if chunk is None else parser.lines(chunk)
            if not lines:
                continue
            batch: list[Any] = []
            error: ProviderError | None = None
            for line in lines:
                try:
                    value = from_json(line)
                except ValueError as exc:
                    error = self.error(None, "malformed_chunk", f"malformed chunk in stream: {exc}")
                    break
                if type(value) is dict and value.get("error"):
                    error = self.error_from_payload(value)
                    break
                batch.append(value)
            if batch:
                yield batch
            if error is not None:
                raise error

    async def _stream_bytes(self, path: str, body: Any) -> AsyncIterator[bytes | None]:
        """The response body in chunks, then ``None`` at a clean end of the body."""
        response = await self._send(path, body, read_body=False)
        try:
            try:
                async for chunk in response.aiter_bytes():
                    if chunk:
                        yield chunk
            except httpx.TimeoutException:
                raise self.error(
                    None, "timeout", "the stream stalled: no data within the read timeout"
                ) from None
            except httpx.TransportError as exc:
                raise self.error(
                    None,
                    "connection_error",
                    f"connection dropped mid-stream ({type(exc).__name__}: {exc})",
                ) from None
            yield None
        finally:
            await response.aclose()

    async def _send(self, path: str, body: Any, *, read_body: bool) -> httpx.Response:
        """Send with retries; return a 2xx response (body read when ``read_body``)."""
        url = join_url(self.base_url, path)
        content = json.dumps(body, ensure_ascii=False).encode("utf-8")
        client = self.client()
        attempt = 0
        while True:
            started = time.perf_counter()
            try:
                request = client.build_request("POST", url, content=content, headers=self._headers)
                response = await client.send(request, stream=True)
            except httpx.TransportError as exc:
                if attempt < self.max_retries:
                    pause = self._backoff(attempt)
                    logger.info(
                        "%s: %s, retry %d in %.2f s",
                        self.provider,
                        type(exc).__name__,
                        attempt + 1,
                        pause,
                    )
                    attempt += 1
                    await asyncio.sleep(pause)
                    continue
                raise self._transport_error(exc, attempt) from None
            status = response.status_code
            logger.debug(
                "%s: POST %s -> %d in %.3f s (request id %s)",
                self.provider,
                self.redact(url),
                status,
                time.perf_counter() - started,
                response.headers.get("x-request-id") or response.headers.get("request-id"),
            )
            if status < 300:
                if read_body:
                    try:
                        await response.aread()
                    except httpx.TransportError as exc:
                        raise self._transport_error(exc, attempt) from None
                    finally:
                        await response.aclose()
                return response
            try:
                await response.aread()  # the error body, even when streaming
            except httpx.TransportError:
                pass
            finally:
                await response.aclose()
            error_type, message, hinted = error_from_body(
                self.provider, status, response.content, default_message=response.reason_phrase
            )
            delay = _retry_after(response.headers)
            if delay is None:
                delay = hinted
            retryable = self._should_retry(response, status, error_type, message, delay)
            if retryable and attempt < self.max_retries:
                wait = self._backoff(attempt) if delay is None else delay
                logger.info(
                    "%s: HTTP %d, retry %d in %.2f s", self.provider, status, attempt + 1, wait
                )
                attempt += 1
                await asyncio.sleep(wait)
                continue
            if retryable and attempt:
                message = f"{message} (gave up after {attempt} retries)"
            elif delay is not None and delay > MAX_RETRY_WAIT_S:
                message = f"{message} (the server asks to wait {delay:.0f} s)"
            raise self.error(status, error_type, message, retryable=retryable)

    def _should_retry(
        self,
        response: httpx.Response,
        status: int,
        error_type: str | None,
        message: str,
        delay: float | None,
    ) -> bool:
        should = response.headers.get("x-should-retry")
        if should in ("true", "false"):
            return should == "true"
        if status not in RETRY_STATUSES and status < 500:
            return False
        if delay is not None and delay > MAX_RETRY_WAIT_S:
            return False
        if status == 429 and _quota_exhausted(error_type, message, delay is not None):
            return False
        return True

    def _backoff(self, attempt: int) -> float:
        delay = min(self.backoff * 2.0**attempt, 8.0)
        return delay * (1.0 - 0.25 * random.random())

    def _transport_error(self, exc: httpx.TransportError, retries: int) -> ProviderError:
        tries = f" after {retries} retries" if retries else ""
        if isinstance(exc, httpx.ConnectTimeout):
            kind, text = "timeout", "timed out connecting to"
        elif isinstance(exc, httpx.TimeoutException):
            kind, text = "timeout", "no response within the timeout from"
        else:
            kind, text = "connection_error", "could not connect to"
        where = self.redact(self.base_url)
        detail = self.redact(str(exc)) or type(exc).__name__
        return self.error(None, kind, f"{text} {where}{tries} ({detail})", retryable=True)


class HttpProvider:
    """What every HTTP adapter shares: a repr that never shows the key, and closing."""

    name: str
    model: str
    base_url: str
    _http: HttpSession

    def __repr__(self) -> str:  # never the key: secrets in the base URL are redacted too
        base_url = self._http.redact(self.base_url)
        return f"{type(self).__name__}(model={self.model!r}, base_url={base_url!r})"

    async def aclose(self) -> None:
        await self._http.aclose()
