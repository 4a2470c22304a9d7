"""The provider a batch's rows share: one connection pool, with the limits on every request.

For a model string, the batch builds the agent's adapter again on an
``httpx.AsyncClient`` of its own (a pool sized to the concurrency, the limits as
event hooks) and closes it at the end. When the agent records or replays (its
``http_client``), that client is used and the hooks are added for the batch's
duration. A provider object (a ScriptedModel, the embedded model) is used as it is;
the limits then hold per row instead of per request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import httpx

from .._internal.redaction import collect_secrets
from ..providers import Provider, get_provider, makes_http_requests
from .limits import HttpLimits
from .row import BatchAgent

__all__ = ["BatchSession"]

Hooks = dict[str, list[Callable[..., Any]]]


class BatchSession:
    """The batch's provider and HTTP client.

    Args:
        agent: the agent whose model and options the rows use.
        options: the agent's provider options (``base_url``, ``api_key``, ``env``...).
        concurrency: the most rows in flight (the pool's size).
        rebuildable: the agent has a model string (not a provider object), so its
            adapter can be built again from ``options``.
    """

    def __init__(
        self, agent: BatchAgent, options: Mapping[str, Any], *, concurrency: int, rebuildable: bool
    ) -> None:
        self.secrets = collect_secrets(dict(options), options.get("env"))
        self._own_client: httpx.AsyncClient | None = None
        self._shared_client: httpx.AsyncClient | None = None
        self._saved_hooks: Hooks | None = None
        self._hooks: Hooks = {"request": [], "response": []}
        given = options.get("http_client")
        if not rebuildable or not makes_http_requests(agent.model):
            self.provider: Provider = agent.provider
            self.observed = False
            return
        self.observed = True
        if isinstance(given, httpx.AsyncClient):
            self._shared_client = given
            self.provider = agent.provider
            return
        from ..providers.http import DEFAULT_TIMEOUT

        pool = httpx.Limits(max_connections=concurrency + 4, max_keepalive_connections=concurrency)
        # The hooks list is filled by attach(); httpx reads it at each request.
        self._own_client = httpx.AsyncClient(
            timeout=DEFAULT_TIMEOUT, limits=pool, event_hooks=self._hooks
        )
        self.provider = get_provider(agent.model, **{**options, "http_client": self._own_client})

    def attach(self, limits: HttpLimits) -> None:
        """Put ``limits`` on every request of the batch."""
        hooks = limits.hooks()
        if self._own_client is not None:
            self._own_client.event_hooks = hooks
        elif self._shared_client is not None:
            client = self._shared_client
            self._saved_hooks = {k: list(v) for k, v in client.event_hooks.items()}
            merged = {k: [*self._saved_hooks.get(k, []), *hooks.get(k, [])] for k in hooks}
            client.event_hooks = merged

    async def close(self) -> None:
        """Close the batch's own client; give a shared one its hooks back."""
        if self._own_client is not None:
            await self._own_client.aclose()
        if self._shared_client is not None and self._saved_hooks is not None:
            self._shared_client.event_hooks = self._saved_hooks
            self._saved_hooks = None
