"""One provider instance's HTTP: a client per event loop, retries, errors.

::

    session = HttpSession(
        "anthropic",
        base_url="https://api.anthropic.com",
        headers={"x-api-key": key, "anthropic-version": "2023-06-01"},
        secrets=[key],                      # redacted from every error text
        auth_hint="set ANTHROPIC_API_KEY or pass api_key=...",
    )
    async for piece in session.post_stream("/v1/messages", body):
        ...   # the response body, one piece per network read
    whole = await session.post("/v1/messages", body)        # the whole body (bytes)
    data = await session.post_json("/v1/messages", body)    # one parsed JSON reply
    await session.aclose()

What the session does for its provider:

* **Clients.** One ``httpx.AsyncClient`` per event loop: the same provider may be
  used from nbagent's background loop thread and from the Jupyter kernel's loop,
  and an AsyncClient must never cross loops. A caller's ``http_client=`` is used
  as-is for every loop (their responsibility).
* **Retries** before the first response byte only (see :mod:`.retry`).
* **Errors.** Every failure becomes :class:`~nbagent.errors.ProviderError` with the
  provider's own message (see :mod:`.errors`); the error body is read even when
  streaming; a connection dropped or stalled mid-stream raises too.
* **Secrets.** The secrets never appear in an error text; nothing here logs
  headers or bodies.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
import weakref
from collections.abc import AsyncGenerator, Iterable, Mapping
from typing import Any

import httpx
from pydantic_core import from_json

from ..._internal.deadline import remaining
from ...errors import ProviderError
from .errors import ErrorReporter, error_from_body, payload_error
from .retry import MAX_RETRY_WAIT_S, RetryPolicy, retry_after

logger = logging.getLogger("nbagent.providers")

__all__ = ["DEFAULT_TIMEOUT", "HttpSession", "join_url"]

DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=10.0)
"""Generous read timeout (reasoning models think long before the first byte)."""


def _fits(wait: float) -> bool:
    """Whether waiting ``wait`` seconds before a retry still leaves the run time to use it."""
    left = remaining()
    return left is None or wait < left


def join_url(base_url: str, path: str) -> str:
    """``join_url("http://h/v1/", "/chat/completions")`` -> ``"http://h/v1/chat/completions"``."""
    if not path:
        return base_url
    return base_url.rstrip("/") + "/" + path.lstrip("/")


class HttpSession:
    """HTTP for one provider instance. See the module docstring for usage.

    Args:
        provider: the provider name errors carry.
        base_url: every path is joined to it.
        headers: sent with every request (auth goes here, never in the URL).
        secrets: redacted from every error text.
        auth_hint: added to a 401's message ("set OPENAI_API_KEY or pass api_key=...").
        http_client: used as-is for every loop, never closed here.
        max_retries: retries before the first response byte.
        timeout: seconds or an ``httpx.Timeout``: connecting and the wait for each
            response byte (default: :data:`DEFAULT_TIMEOUT`).
        backoff: the first retry wait in seconds (doubled each time, capped at 8 s).
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
        # Parsed once, not on every request (httpx parses a string URL and normalises
        # a dict of headers each time: about half of building a request).
        self._request_headers = httpx.Headers(self._headers)
        self._urls: dict[tuple[str, str], httpx.URL] = {}
        self.errors = ErrorReporter(provider, secrets, auth_hint)
        self.retry = RetryPolicy(max_retries, backoff)
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
        return f"HttpSession({self.provider!r}, base_url={self.errors.redact(self.base_url)!r})"

    @property
    def headers(self) -> dict[str, str]:
        """The headers every request carries (the key among them: never log or store them)."""
        return dict(self._headers)

    @property
    def auth_hint(self) -> str:
        """What a 401 tells the user to set."""
        return self.errors.auth_hint

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

    # -- requests ----------------------------------------------------------------

    async def post(self, path: str, body: Any) -> bytes:
        """POST ``body`` as JSON; return the whole response body (retries included).

        Only a 2xx response gets here: any other raises ProviderError.
        """
        response = await self._send(path, body, read_body=True)
        return response.content

    async def post_stream(self, path: str, body: Any) -> AsyncGenerator[bytes, None]:
        """POST ``body`` as JSON; yield the response body, one piece per network read.

        Retries happen before the first byte only; a connection dropped or stalled
        later raises ProviderError.
        """
        response = await self._send(path, body, read_body=False)
        try:
            try:
                async for chunk in response.aiter_bytes():
                    if chunk:
                        yield chunk
            except httpx.TimeoutException:
                raise self.errors.error(
                    None, "timeout", "the stream stalled: no data within the read timeout"
                ) from None
            except httpx.TransportError as exc:
                raise self.errors.error(
                    None,
                    "connection_error",
                    f"connection dropped mid-stream ({type(exc).__name__}: {exc})",
                ) from None
        finally:
            await response.aclose()

    async def post_json(self, path: str, body: Any) -> Any:
        """POST ``body`` as JSON and return the parsed JSON reply (retries included).

        A reply that is not JSON, or that is an error payload, raises ProviderError.
        """
        response = await self._send(path, body, read_body=True)
        try:
            data = from_json(response.content)
        except ValueError:
            snippet = response.text[:200]
            raise self.errors.error(
                response.status_code, "malformed_response", f"reply is not JSON: {snippet!r}"
            ) from None
        if isinstance(data, dict) and data.get("error"):
            raise self.errors.report(payload_error(self.provider, data))
        return data

    def _url(self, path: str) -> httpx.URL:
        """The parsed URL of ``path`` on :attr:`base_url` (which a caller may change)."""
        key = (self.base_url, path)
        url = self._urls.get(key)
        if url is None:
            if len(self._urls) >= 64:  # request paths are few; a changing one must not pile up
                self._urls.clear()
            url = self._urls[key] = httpx.URL(join_url(self.base_url, path))
        return url

    async def _send(self, path: str, body: Any, *, read_body: bool) -> httpx.Response:
        """Send with retries; return a 2xx response (body read when ``read_body``)."""
        url = self._url(path)
        content = json.dumps(body, ensure_ascii=False).encode("utf-8")
        client = self.client()
        headers = self._request_headers
        attempt = 0
        while True:
            started = time.perf_counter()
            try:
                request = client.build_request("POST", url, content=content, headers=headers)
                response = await client.send(request, stream=True)
            except httpx.TransportError as exc:
                pause = self.retry.pause(attempt)
                if attempt < self.retry.max_retries and _fits(pause):
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
            if logger.isEnabledFor(logging.DEBUG):
                logger.debug(
                    "%s: POST %s -> %d in %.3f s (request id %s)",
                    self.provider,
                    self.errors.redact(join_url(self.base_url, path)),
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
            if 300 <= status < 400:
                where = self.errors.redact(response.headers.get("location") or "nowhere")
                raise self.errors.error(
                    status,
                    "redirect",
                    f"the server redirected the request to {where!r}; redirects are not "
                    "followed (an API does not move: check base_url)",
                )
            error_type, message, hinted = error_from_body(
                self.provider, status, response.content, default_message=response.reason_phrase
            )
            delay = retry_after(response.headers)
            if delay is None:
                delay = hinted
            retryable = self.retry.should_retry(
                response.headers, status, error_type, message, delay
            )
            wait = self.retry.pause(attempt) if delay is None else delay
            left = remaining()
            if retryable and attempt < self.retry.max_retries and not _fits(wait):
                # Waiting would outlast the run: fail now, with the provider's own message.
                message = (
                    f"{message} (the server asks to wait {wait:.0f} s; "
                    f"the run has {left or 0:.0f} s left)"
                    if delay is not None
                    else f"{message} (no time left in the run for a retry)"
                )
                raise self.errors.error(status, error_type, message, retryable=True)
            if retryable and attempt < self.retry.max_retries:
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
            raise self.errors.error(status, error_type, message, retryable=retryable)

    def _transport_error(self, exc: httpx.TransportError, retries: int) -> ProviderError:
        tries = f" after {retries} retries" if retries else ""
        if isinstance(exc, httpx.ConnectTimeout):
            kind, text = "timeout", "timed out connecting to"
        elif isinstance(exc, httpx.TimeoutException):
            kind, text = "timeout", "no response within the timeout from"
        else:
            kind, text = "connection_error", "could not connect to"
        where = self.errors.redact(self.base_url)
        detail = self.errors.redact(str(exc)) or type(exc).__name__
        return self.errors.error(None, kind, f"{text} {where}{tries} ({detail})", retryable=True)
