"""The provider template: what every HTTP adapter shares, written once.

An adapter subclasses :class:`HttpProvider` and declares only what differs::

    class MadeUpProvider(HttpProvider):
        name = "madeup"                          # the prefix in "madeup:model-x"
        key_variables = ("MADEUP_API_KEY",)      # where the key is read from, in order
        base_url_variable = "MADEUP_BASE_URL"
        default_base_url = "https://api.madeup.invalid"
        key_header, key_prefix = "x-madeup-key", ""   # how the key is sent
        secret_headers = ("x-madeup-key",)       # redacted from recordings
        path = "/v2/turn"
        output_mode = "native"                   # typed output: see native_output

        def build_body(self, request: ModelRequest) -> dict[str, Any]: ...
        def decoder(self, request: ModelRequest) -> Decoder: ...   # see decoding.py

What its models can do comes from :meth:`HttpProvider.capabilities`: the class
attributes ``output_mode``, ``native_output_with_tools``, ``pricing_id`` and
``tracing_name``, and the model family's context window and image support.

The template owns the constructor (environment fallback, key check, headers,
:class:`~.session.HttpSession`), :meth:`HttpProvider.stream` (build the body,
POST it, feed the body to the decoder, report errors with the secrets redacted),
a repr that never shows the key, and :meth:`HttpProvider.aclose`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, ClassVar

import httpx

from ...errors import ConfigError, ProviderError
from ..base import Capabilities, ModelRequest, OutputMode, ProviderEvent
from ..families import family_capabilities
from ..raw_log import tee
from .decoding import Decoder
from .session import HttpSession

if TYPE_CHECKING:
    from ..batch.api import BatchApi

__all__ = ["HttpProvider"]


class HttpProvider:
    """The base of every HTTP adapter; see the module docstring.

    Args:
        model: the model name after the prefix ("gpt-4o-mini" in "openai:gpt-4o-mini").
        base_url: the API's address (default: ``base_url_variable``, then
            ``default_base_url``).
        api_key: the key (default: the first of ``key_variables`` that is set).
        http_client: an ``httpx.AsyncClient`` to use for every request (recording,
            proxies...); it is never closed here.
        env: the environment to read (default: ``os.environ``).
        max_retries: retries before the first response byte (see ``http/retry.py``).
        timeout: seconds, or an ``httpx.Timeout``, for connecting and for each byte.
        backoff: the first retry wait in seconds (doubled each time, capped at 8 s).
        extra_body: fields merged into every request body (server-specific options).
    """

    # -- what an adapter declares ---------------------------------------------------

    name: ClassVar[str]
    """The provider name: the prefix of the model string, and in every error."""
    title: ClassVar[str] = ""
    """How messages name it ("OpenAI"); the name when empty."""
    key_variables: ClassVar[tuple[str, ...]] = ()
    """Environment variables holding the key, in order. Setting one also makes
    ``default_model`` the default model (see :func:`nbagent.providers.resolve_model`)."""
    bearer_token_variables: ClassVar[tuple[str, ...]] = ()
    """Variables holding a gateway token, sent as ``Authorization: Bearer`` when no
    key is set. They do not make this provider the default."""
    base_url_variable: ClassVar[str | None] = None
    """The environment variable that moves the API elsewhere."""
    other_variables: ClassVar[tuple[str, ...]] = ()
    """Other environment variables the adapter reads (for :func:`environment_variables`)."""
    default_base_url: ClassVar[str] = ""
    key_header: ClassVar[str] = "authorization"
    """The header that carries the key..."""
    key_prefix: ClassVar[str] = "Bearer "
    """...after this prefix."""
    key_note: ClassVar[str] = ""
    """Added to the missing-key error ("a local base_url= server needs none")."""
    secret_headers: ClassVar[tuple[str, ...]] = ("authorization",)
    """Request headers that may hold a secret: recordings redact them."""
    invented_id_pattern: ClassVar[str | None] = None
    """A regular expression matching the call ids this adapter makes up when the
    API sends none (random each run: replay matches them by order instead)."""
    default_model: ClassVar[str | None] = None
    """The model used when only this provider's key is set (None: never the default)."""
    makes_http_requests: ClassVar[bool] = True
    path: ClassVar[str] = ""
    """The request path joined to the base URL (see :meth:`request_path`)."""

    # -- what its models can do (see base.Capabilities) ---------------------------------

    output_mode: ClassVar[OutputMode] = "prompt"
    """How typed answers are asked for: "native" (implement :meth:`native_output`),
    "tool" (a final_answer tool, forced with :meth:`choose_tool`) or "prompt"."""
    native_output_with_tools: ClassVar[bool] = True
    """False: requests that offer tools ask for typed output in the prompt instead."""
    pricing_id: ClassVar[str | None] = None
    """The provider id genai-prices prices this API under (None: never priced)."""
    tracing_name: ClassVar[str] = ""
    """OpenTelemetry's ``gen_ai.provider.name`` when it differs from :attr:`name`."""
    text_tool_calls: bool = False
    """Whether replies may carry tool calls as text (servers without a tool-call parser)."""

    _capabilities: Capabilities | None = None  # computed on first use (the model is fixed)

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON request body for ``request`` (``extra_body`` merged in)."""
        raise NotImplementedError

    def decoder(self, request: ModelRequest) -> Decoder:
        """A fresh decoder for the response to ``request``."""
        raise NotImplementedError

    # -- optional steps -----------------------------------------------------------------

    def request_path(self, request: ModelRequest) -> str:
        """The path of the request (default: :attr:`path`)."""
        return self.path

    def resolve_base_url(self, given: str | None) -> str:
        """The base URL from ``base_url=`` or the environment (None when neither is set)."""
        return (given or self.default_base_url).rstrip("/")

    def headers(self, env: Mapping[str, str]) -> dict[str, str]:
        """Headers other than the key sent with every request (API version...)."""
        return {}

    def requires_key(self) -> bool:
        """Whether a missing key is an error (called once ``base_url`` is known)."""
        return True

    def explain(self, error: ProviderError) -> ProviderError:
        """A chance to add advice to an error before it is raised."""
        return error

    def capabilities(self) -> Capabilities:
        """What this model can do: the class's declarations and the model family's facts."""
        if self._capabilities is None:
            self._capabilities = family_capabilities(
                self.model,
                output_mode=self.output_mode,
                native_output_with_tools=self.native_output_with_tools,
                pricing_id=self.pricing_id,
                text_tool_calls=self.text_tool_calls,
                tracing_name=self.tracing_name or self.name,
            )
        return self._capabilities

    def native_output(
        self, extra: dict[str, Any], schema: dict[str, Any], name: str
    ) -> dict[str, Any]:
        """``extra`` with this API's structured-output fields (for ``output_mode="native"``)."""
        raise NotImplementedError(f"{type(self).__name__} declares no native structured output")

    def choose_tool(self, name: str) -> dict[str, Any]:
        """Extra body fields forcing a call of tool ``name`` (default: none: not forced)."""
        return {}

    def batch_api(self) -> BatchApi | None:
        """The batch API of this provider's account (``Agent.map(mode="batch")``), if any."""
        return None

    # -- written once -------------------------------------------------------------------

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        env: Mapping[str, str] | None = None,
        max_retries: int = 3,
        timeout: float | httpx.Timeout | None = None,
        backoff: float = 0.5,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        env = os.environ if env is None else env
        if not model:
            example = self.default_model or "MODEL"
            raise ConfigError(f"Name a model, e.g. Agent('{self.name}:{example}').")
        self.model = model
        self.extra_body = dict(extra_body or {})
        from_env = env.get(self.base_url_variable) if self.base_url_variable else None
        self.base_url = self.resolve_base_url(base_url or from_env)
        credentials, secret = self._credentials(api_key, env)
        hint = self._auth_hint()
        if not credentials and self.requires_key():
            note = f" ({self.key_note})." if self.key_note else ""
            raise ConfigError(f"{self.title or self.name} needs an API key: {hint}{note}")
        self.session = HttpSession(
            self.name,
            base_url=self.base_url,
            headers={**credentials, **self.headers(env)},
            secrets=[secret],
            auth_hint=hint,
            http_client=http_client,
            max_retries=max_retries,
            timeout=timeout,
            backoff=backoff,
        )

    def __repr__(self) -> str:  # never the key: secrets in the base URL are redacted too
        base_url = self.session.errors.redact(self.base_url)
        return f"{type(self).__name__}(model={self.model!r}, base_url={base_url!r})"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        """Events for one request: the body POSTed, the response fed to the decoder."""
        body = self.build_body(request)
        decoder = tee(self.decoder(request), self.name, self.session.errors.redact)
        path = self.request_path(request)
        try:
            if request.stream:
                pieces = self.session.post_stream(path, body)
                async with aclosing(pieces):
                    async for piece in pieces:
                        for event in decoder.feed(piece):
                            yield event
                        if decoder.error is not None:
                            raise decoder.error
            else:
                decoder.feed(await self.session.post(path, body))
            for event in decoder.close():
                yield event
        except ProviderError as error:
            raise self.explain(self.session.errors.report(error)) from None

    async def aclose(self) -> None:
        """Close the HTTP clients this provider made."""
        await self.session.aclose()

    def _credentials(
        self, api_key: str | None, env: Mapping[str, str]
    ) -> tuple[dict[str, str], str]:
        """The headers carrying the key or token, and that secret ({} and "" without)."""
        key = api_key or next((env[v] for v in self.key_variables if env.get(v)), "")
        if key:
            return {self.key_header: self.key_prefix + key}, key
        token = next((env[v] for v in self.bearer_token_variables if env.get(v)), "")
        if token:  # a gateway's token goes in Authorization instead of the key header
            return {"authorization": f"Bearer {token}"}, token
        return {}, ""

    def _auth_hint(self) -> str:
        """What to set for a key: "set GEMINI_API_KEY or GOOGLE_API_KEY, or pass api_key=..."."""
        names = " or ".join(self.key_variables)
        if not names:
            return "pass api_key=..."
        comma = "," if len(self.key_variables) > 1 else ""
        return f"set {names}{comma} or pass api_key=..."
