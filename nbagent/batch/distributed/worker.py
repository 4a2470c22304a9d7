"""A row on a worker: the agent rebuilt from its spec once, then one run per row.

:class:`WorkerAgent` is built once per worker process and spec (a Ray actor holds
one; a Dask worker keeps one per spec digest in :data:`_AGENTS`), with one
``httpx`` client whose hooks ask the cluster's limiter before every request. A row
runs in a conversation whose id the driver chose, and what comes back is a
:class:`RemoteRun`: the run's result without the tools' Python values, the answer
as JSON, and the messages when the driver's history wants them. Workers write
nothing to disk: the journal and the history are the driver's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from ...messages import Conversation, Message, ToolRound
from ...results import RunResult
from ..row import RowContext, dump_output, run_row
from .limiter import LimiterCalls, LimiterHooks
from .spec import AgentSpec

__all__ = ["RemoteRun", "WorkerAgent", "cached_agent"]

POOL_CONNECTIONS = 64
"""Connections a worker keeps open to the provider (rows in flight on it share them)."""


@dataclass
class RemoteRun:
    """One row's run, as a worker sends it back to the driver."""

    result: RunResult | None
    """The run's result (tool values dropped, ``output`` None: see ``output_json``)."""
    output_json: str | None = None
    """The answer as JSON, read back on the driver with the driver's own output type."""
    error: tuple[str, str] | None = None
    """(exception type name, message) when the run raised."""
    messages: list[Message] | None = None
    """The conversation's messages, when the driver writes the row's history."""


class WorkerAgent:
    """The agent of one spec on one worker process (see the module docstring)."""

    def __init__(self, spec: AgentSpec, limiter: LimiterCalls) -> None:
        from ...providers.http import DEFAULT_TIMEOUT

        parts = spec.parts()
        pool = httpx.Limits(
            max_connections=POOL_CONNECTIONS, max_keepalive_connections=POOL_CONNECTIONS
        )
        self._client = httpx.AsyncClient(
            timeout=DEFAULT_TIMEOUT, limits=pool, event_hooks=LimiterHooks(limiter).hooks()
        )
        self.agent = parts.factory(
            parts.model,
            tools=parts.tools,
            system=parts.system,
            store=None,  # the driver writes the history
            **{**parts.provider_options, "http_client": self._client},
        )
        self.agent.settings = parts.settings
        self.options = parts.row_options
        self.output_type = parts.row_options.get("output_type")
        # No store: the driver writes the history from the messages sent back.
        self._rows = RowContext(self.agent, self.options, store=None, secrets=[], history=False)

    async def run(self, prompt: str, conversation_id: str, *, keep_messages: bool) -> RemoteRun:
        """Run one row in conversation ``conversation_id``; ``keep_messages``: send them back."""
        conversation = Conversation(id=conversation_id, system=self.agent.system)
        result, error = await run_row(self._rows, prompt, conversation)
        failed = error is not None or result is None or result.stop_reason != "complete"
        remote = RemoteRun(None)
        if result is not None:
            if not failed:
                remote.output_json = dump_output(result.output, self.output_type)
            remote.result = _portable(result)
        if error is not None:
            remote.error = (type(error).__name__, str(error))
        if keep_messages or failed:
            remote.messages = [_without_values(m) for m in conversation.messages]
        return remote

    async def aclose(self) -> None:
        """Close the worker's connection pool."""
        await self._client.aclose()


def _portable(result: RunResult) -> RunResult:
    """``result`` without what may not travel: the typed value, the tools' Python values."""
    message = _without_values(result.message) if result.message is not None else None
    return dataclasses.replace(
        result, output=None, rounds=_strip(result.rounds), message=message, output_type=None
    )


def _without_values(message: Message) -> Message:
    if not message.rounds:
        return message
    return dataclasses.replace(message, rounds=_strip(message.rounds))


def _strip(rounds: list[ToolRound]) -> list[ToolRound]:
    """The rounds with each tool result's Python value dropped (its preview stays)."""
    return [
        dataclasses.replace(r, results=[dataclasses.replace(t, value=None) for t in r.results])
        for r in rounds
    ]


_AGENTS: dict[tuple[str, str], WorkerAgent] = {}
"""This process's agents by (spec digest, batch): a Dask worker's cache (a Ray actor
holds its own agent)."""
_AGENTS_LOCK = threading.Lock()
KEPT_AGENTS = 4
"""Agents a process keeps: those of earlier batches go (their pools closed) past this."""


def cached_agent(spec: AgentSpec, batch: str, limiter: Callable[[], LimiterCalls]) -> WorkerAgent:
    """The process's agent for ``spec`` in ``batch``, built on the batch's first row here.

    ``limiter`` makes the batch's :class:`LimiterCalls` (called only when building).
    """
    key = (spec.digest, batch)
    with _AGENTS_LOCK:  # a worker's threads start rows at once: one agent all the same
        agent = _AGENTS.get(key)
        if agent is None:
            while len(_AGENTS) >= KEPT_AGENTS:
                _retire(_AGENTS.pop(next(iter(_AGENTS))))
            agent = _AGENTS[key] = WorkerAgent(spec, limiter())
    return agent


def _retire(agent: WorkerAgent) -> None:
    """Close an old batch's pool on the loop its connections live on."""
    from ..._internal.threads import background_loop

    asyncio.run_coroutine_threadsafe(agent.aclose(), background_loop())
