"""The HTTP every batch API adapter sends: on the live provider's client, key and redaction.

:class:`BatchHttp` sends a batch API's requests on the live provider's own client,
headers (its key) and error reporting (secrets redacted): nothing is re-implemented
about authentication.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import httpx

from ..base import ModelRequest
from ..http import HttpProvider, error_from_body, join_url

__all__ = ["BatchAdapter", "BatchHttp", "error_text", "jsonl"]


def _boundary(files: Mapping[str, Any]) -> str:
    """A multipart boundary decided by the upload's content.

    The parts are hashed as they are, never copied into a repr: an upload may be 200 MB.
    """
    digest = hashlib.sha256()
    for name, part in sorted(files.items(), key=lambda item: item[0]):
        digest.update(name.encode())
        for field_value in part if isinstance(part, tuple) else (part,):
            data = field_value if isinstance(field_value, bytes) else str(field_value).encode()
            digest.update(len(data).to_bytes(8, "big") + data)
    return f"nbagent-{digest.hexdigest()[:32]}"


class BatchHttp:
    """Requests to a batch API on ``provider``'s client, with its key and its redaction."""

    def __init__(self, provider: HttpProvider) -> None:
        self.provider = provider
        self.session = provider.session

    def url(self, path: str) -> str:
        """The absolute URL of ``path`` on the API's base URL."""
        return join_url(self.session.base_url, path)

    async def send(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        files: Mapping[str, Any] | None = None,
        data: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """Send one request; a non-2xx answer raises ProviderError (secrets redacted)."""
        headers = self.session.headers
        content = None
        if files is not None:
            # A boundary decided by the content (httpx takes it from this header), so the
            # same upload is the same bytes: a recording replays it.
            headers["content-type"] = f"multipart/form-data; boundary={_boundary(files)}"
        elif body is not None:
            content = json.dumps(body, ensure_ascii=False).encode("utf-8")
        else:
            headers.pop("content-type", None)
        client = self.session.client()
        try:
            response = await client.request(
                method, self.url(path), content=content, files=files, data=data, headers=headers
            )
        except httpx.TransportError as exc:
            detail = self.session.errors.redact(str(exc)) or type(exc).__name__
            raise self.session.errors.error(
                None, "connection_error", f"batch API request failed ({detail})", retryable=True
            ) from None
        if response.status_code >= 300:
            error_type, message, _ = error_from_body(
                self.session.provider, response.status_code, response.content,
                default_message=response.reason_phrase,
            )  # fmt: skip
            status = response.status_code
            retryable = status == 429 or status >= 500
            raise self.session.errors.error(status, error_type, message, retryable=retryable)
        return response

    async def json(self, method: str, path: str, **options: Any) -> dict[str, Any]:
        """:meth:`send`, the answer parsed as a JSON object."""
        response = await self.send(method, path, **options)
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise self.session.errors.error(
                response.status_code,
                "malformed_response",
                "the batch API's reply is not a JSON object",
            )
        return data


def jsonl(text: str) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL text (blank and malformed lines skipped)."""
    items = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict):
            items.append(item)
    return items


def error_text(provider: str, error: Any) -> str:
    """One line from an error object of any API (``{"message"...}``, nested, or text)."""
    if isinstance(error, str):
        return error
    _, message, _ = error_from_body(provider, None, error if isinstance(error, dict) else {})
    return message


class BatchAdapter:
    """What the batch API adapters share: their limits, and the live provider's HTTP and path.

    An adapter names its provider and limits as class keywords, as in ``class
    AnthropicBatch(BatchAdapter, provider="anthropic", max_requests=100_000,
    max_megabytes=256)``, and implements the methods of :class:`~.api.BatchApi`.
    """

    provider: str
    """The provider's name (the job journal's key)."""
    max_requests: int
    """Requests one job may hold at most."""
    max_bytes: int
    """Bytes of request bodies one job may hold at most."""

    def __init_subclass__(
        cls, *, provider: str, max_requests: int, max_megabytes: int, **kwargs: Any
    ) -> None:
        super().__init_subclass__(**kwargs)
        cls.provider = provider
        cls.max_requests = max_requests
        cls.max_bytes = max_megabytes * 1024 * 1024

    def __init__(self, provider: HttpProvider) -> None:
        self.http = BatchHttp(provider)
        self.live_path = provider.request_path(ModelRequest(system=None, messages=[], stream=False))
        """The path of the live non-streaming call, which the API's own paths derive from."""
