"""Error bodies of every API, turned into :class:`~nbagent.errors.ProviderError`.

:func:`error_from_body` reads the error shapes of OpenAI, vLLM, Anthropic, Gemini
and Ollama. :class:`ErrorReporter` makes the errors of one provider instance: it
adds the "what to set" hint to a 401 and redacts the instance's secrets (through
:mod:`nbagent._internal.redaction`, the one redaction nbagent has) from every text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ..._internal.redaction import Scrubber
from ...errors import ProviderError
from .retry import finite_seconds

__all__ = ["ErrorReporter", "error_from_body", "payload_error"]


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
    return finite_seconds(text.strip().rstrip("s"))


def payload_error(provider: str, payload: Any) -> ProviderError:
    """The error for an error payload that arrived inside a 200 response (mid-stream)."""
    error_type, message, _ = error_from_body(provider, None, payload)
    status = None
    if isinstance(payload, dict):
        err = payload.get("error")
        code = err.get("code") if isinstance(err, dict) else None
        status = code if isinstance(code, int) else None
    return ProviderError(provider, status, error_type, f"error during the response: {message}")


class ErrorReporter:
    """Makes one provider instance's errors: secrets redacted, a 401 says what to set.

    Args:
        provider: the provider name errors carry ("openai", ...).
        secrets: values never to show (the key, a token); replaced by ``[redacted]``.
        auth_hint: added to the message of a 401 ("set OPENAI_API_KEY or ...").
    """

    def __init__(self, provider: str, secrets: Iterable[str | None] = (), auth_hint: str = ""):
        self.provider = provider
        self.auth_hint = auth_hint
        self._scrubber = Scrubber(s for s in secrets if s)

    def redact(self, text: str) -> str:
        """``text`` with the secrets (and anything shaped like an API key) replaced."""
        return self._scrubber.text(text)

    def error(
        self,
        status: int | None,
        error_type: str | None,
        message: str,
        *,
        retryable: bool = False,
    ) -> ProviderError:
        """A ProviderError for this provider, as :meth:`report` leaves it."""
        return self.report(
            ProviderError(self.provider, status, error_type, message, retryable=retryable)
        )

    def report(self, error: ProviderError) -> ProviderError:
        """``error`` as the user may see it: secrets redacted, a 401 saying what to set.

        Returns ``error`` itself when nothing needed changing (so reporting twice is harmless).
        """
        message = error.message
        if error.status == 401 and self.auth_hint and self.auth_hint not in message:
            message = f"{message} ({self.auth_hint})"
        error_type = self.redact(error.error_type) if error.error_type else None
        message = self.redact(message)
        if error_type == error.error_type and message == error.message:
            return error
        return ProviderError(
            error.provider, error.status, error_type, message, retryable=error.retryable
        )
