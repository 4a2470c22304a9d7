"""The provider a batch-mode row runs on: the live adapter's bodies, answered by a job.

Each row's run is the ordinary agent loop (tools, typed output, retries of invalid
output), so a row's frame values come out as on the live path. Only the model call
differs: :class:`BatchedProvider` builds the body with the live adapter (``stream``
off, exactly what the live non-streaming call sends), hands it to the round
(:class:`~.jobs.BatchRounds`), and decodes the job's result for that request with
the live adapter's own decoder. Which row asks is known from :data:`CURRENT_ROW`.
"""

from __future__ import annotations

import contextvars
import dataclasses
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import ConfigError
from ...messages import Usage
from ...providers import Capabilities, Provider, capabilities
from ...providers.base import ModelRequest, ProviderEvent, UsageReport
from ...providers.batch.api import provider_error
from ...providers.http import HttpProvider
from .pricing import batch_price

if TYPE_CHECKING:
    from .jobs import BatchRounds

__all__ = ["CURRENT_ROW", "BatchedProvider", "RowSlot"]


@dataclass
class RowSlot:
    """One row's requests in batch mode: how many it made, and what they cost."""

    key: str
    requests: int = 0
    cost: float | None = 0.0
    """USD at the batch rate (None once any request's price was unknown)."""


CURRENT_ROW: contextvars.ContextVar[RowSlot | None] = contextvars.ContextVar(
    "nbagent_batch_row_slot", default=None
)
"""The row whose run is asking (set by the batch executor around each row)."""


class BatchedProvider:
    """``inner`` (a live HTTP adapter) with every model call sent through a batch job."""

    def __init__(self, inner: HttpProvider, rounds: BatchRounds) -> None:
        self.inner = inner
        self.rounds = rounds
        self.name = inner.name
        self.model = inner.model
        self._live: Provider = inner  # type: ignore[assignment]  # an HttpProvider is a Provider

    def capabilities(self) -> Capabilities:
        """The live model's, without its price: rows are priced at the batch rate instead."""
        return dataclasses.replace(capabilities(self._live), pricing_id=None)

    def native_output(
        self, extra: dict[str, Any], schema: dict[str, Any], name: str
    ) -> dict[str, Any]:
        """As the live adapter (see :class:`nbagent.providers.StructuredOutput`)."""
        return self.inner.native_output(extra, schema, name)

    def choose_tool(self, name: str) -> dict[str, Any]:
        """As the live adapter."""
        return self.inner.choose_tool(name)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        """The events of the job's answer to this request, as the live decoder reads them."""
        slot = CURRENT_ROW.get()
        if slot is None:
            raise ConfigError("a batch-mode provider answers only the rows of its Agent.map call")
        request = dataclasses.replace(request, stream=False)
        body = self.inner.build_body(request)
        number = slot.requests
        slot.requests += 1
        job_id, custom_id, result = await self.rounds.ask(slot.key, number, body)
        if result.outcome != "succeeded" or result.body is None:
            raise provider_error(self.name, result.outcome, result.error or result.outcome)
        decoder = self.inner.decoder(request)
        decoder.feed(json.dumps(result.body).encode("utf-8"))
        usage: Usage | None = None
        for event in decoder.close():
            if isinstance(event, UsageReport):
                usage = event.usage
            yield event
        self._charge(slot, job_id, custom_id, usage)

    def _charge(self, slot: RowSlot, job_id: str, custom_id: str, usage: Usage | None) -> None:
        if usage is None or not usage.total_tokens:
            return
        cost, basis = batch_price(self._live, usage)
        if cost is None or slot.cost is None:
            slot.cost = None
            return
        slot.cost += cost
        self.rounds.charge(job_id, custom_id, cost, basis)

    async def aclose(self) -> None:
        """The live adapter's connections are the agent's: left open."""
