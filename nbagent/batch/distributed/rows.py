"""The agent the driver's rows run on when they run on a cluster.

The batch driver runs each row as on one machine (counts, cost cap, journal,
history of failed rows): it calls the rows agent's ``stream`` with a conversation
of the row's own. :class:`ClusterRowsAgent` answers that call by running the row
on the cluster (through the executor's open session) and yielding the worker's
result as the run's one event, so everything the driver does with it is unchanged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from ...events import Event, RunFinished
from ...messages import Conversation
from ..row import load_output
from .cluster import ClusterExecutor

if TYPE_CHECKING:
    from ...providers import Provider
    from ...store import Store
    from ...tools import Tool

__all__ = ["ClusterRowsAgent", "RemoteRowError"]


class RemoteRowError(Exception):
    """A row's run raised on a worker; its message reads as the worker's exception did."""


class ClusterRowsAgent:
    """A :class:`~nbagent.batch.row.BatchAgent` whose runs happen on the cluster.

    Args:
        agent: the user's agent (model, settings, system prompt and tools to show).
        executor: the bound executor whose session runs the rows.
        store: the history every row is written to (``history=True``), else None.
        secrets: what the history writer redacts.
        output_type: the driver's output type (the answer's JSON is read back with it).
    """

    def __init__(
        self,
        agent: Any,
        executor: ClusterExecutor,
        store: Store | None,
        secrets: list[str],
        output_type: Any,
    ) -> None:
        self._agent = agent
        self._executor = executor
        self._secrets = secrets
        self._output_type = output_type
        self.model: str = agent.model
        self.settings = agent.settings
        self.store = store

    @property
    def system(self) -> str | None:
        """The user's agent's system prompt."""
        return self._agent.system  # type: ignore[no-any-return]

    @property
    def tools(self) -> dict[str, Tool]:
        """The user's agent's tools (the workers got them in the spec)."""
        return self._agent.tools  # type: ignore[no-any-return]

    @property
    def provider(self) -> Provider:
        """The user's agent's provider (the workers build their own)."""
        return self._agent.provider  # type: ignore[no-any-return]

    def stream(self, prompt: str, *, paced: bool = False, **options: Any) -> AsyncIterator[Event]:
        """Run ``prompt`` on the cluster in ``options["conversation"]``; one RunFinished."""
        return self._stream(prompt, options["conversation"])

    async def _stream(self, prompt: str, conversation: Conversation) -> AsyncIterator[Event]:
        session = self._executor.session
        if session is None:
            raise RuntimeError("the cluster session is closed")
        remote = await session.run(prompt, conversation.id, keep_messages=self.store is not None)
        conversation.messages.extend(remote.messages or ())
        result = remote.result
        if result is not None:
            result.output_type = self._output_type
            if remote.output_json is not None:
                result.output = load_output(remote.output_json, self._output_type)
            if self.store is not None:  # history=True: every row's conversation
                self.store.writer(conversation, secrets=self._secrets).finish(result)
        if result is not None:
            yield RunFinished(result)
        if remote.error is not None:
            kind, message = remote.error
            # Named as on the worker, so the error column reads as it would locally.
            raise type(kind, (RemoteRowError,), {})(message)
