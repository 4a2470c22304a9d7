"""The driver's side of a cluster run: the executor, and the session it opens on the cluster.

A :class:`ClusterExecutor` (:class:`~.ray_executor.RayExecutor`,
:class:`~.dask_executor.DaskExecutor`) runs the driver's usual loop: the rows in
flight are asyncio tasks on the driver, each awaiting its row's result from the
cluster (a Ray ``ObjectRef``, a Dask ``Future``) as it finishes, so the driver
journals each row at once and stays the only writer. Closing the loop (Stop, a
kernel interrupt) cancels those tasks, and each cancels its remote task.

The concurrency the driver allows is also the cluster's: ``concurrency=`` rows in
flight in all. It backs off (AIMD) when the cluster's limiter reports 429s, read
every :attr:`ClusterExecutor.state_interval` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncIterator, Iterator
from typing import Protocol

from ..executor import Gate, LocalExecutor, RowJob, RowOutcome, RowRunner
from ..limits import AdaptiveConcurrency
from .limiter import LimiterState
from .spec import AgentSpec
from .worker import RemoteRun

__all__ = ["ClusterExecutor", "ClusterSession"]


class ClusterSession(Protocol):
    """One batch's hold on a cluster: its workers (with the agent built) and its limiter."""

    async def run(self, prompt: str, conversation_id: str, *, keep_messages: bool) -> RemoteRun:
        """Run one row on some worker; cancelling the caller cancels the remote task."""
        ...

    async def state(self) -> LimiterState:
        """The limiter's counts."""
        ...

    async def close(self) -> None:
        """Release the workers and the limiter (the cluster itself stays up)."""
        ...


class ClusterExecutor:
    """What the Ray and Dask executors share (see the module docstring).

    Subclasses implement :meth:`open`. The executor a user passes holds options
    only; ``Agent.map`` binds a copy of it to the batch's agent spec.
    """

    poll = 0.1
    """Seconds between looks at the gate while rows run."""
    state_interval = 0.5
    """Seconds between reads of the limiter's 429 count."""

    def __init__(self) -> None:
        self.spec: AgentSpec | None = None
        self.rpm: float | None = None
        self.tpm: float | None = None
        self.session: ClusterSession | None = None
        """The open session while :meth:`run` runs (the rows' agent sends rows through it)."""

    def bind(self, spec: AgentSpec, *, rpm: float | None, tpm: float | None) -> ClusterExecutor:
        """A copy of this executor for one batch (the user's object stays unbound)."""
        bound = copy.copy(self)
        bound.spec, bound.rpm, bound.tpm, bound.session = spec, rpm, tpm, None
        return bound

    async def open(self, spec: AgentSpec) -> ClusterSession:
        """Connect to (or start) the cluster, start the limiter and the workers' agents."""
        raise NotImplementedError

    async def run(
        self, jobs: Iterator[RowJob], run_row: RowRunner, gate: Gate
    ) -> AsyncIterator[RowOutcome]:
        """See :meth:`nbagent.batch.Executor.run`; the rows run on the cluster."""
        if self.spec is None:
            raise RuntimeError("a cluster executor runs rows once Agent.map has bound it")
        self.session = session = await self.open(self.spec)
        limit = AdaptiveConcurrency(gate.capacity)
        follower = asyncio.ensure_future(self._follow_limiter(session, limit))
        outcomes = LocalExecutor(poll=self.poll).run(jobs, run_row, _ClusterGate(gate, limit))
        try:
            async for outcome in outcomes:
                if outcome.ok:
                    limit.succeeded()
                yield outcome
        finally:
            await outcomes.aclose()  # type: ignore[attr-defined]
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follower
            self.session = None
            await session.close()

    async def _follow_limiter(self, session: ClusterSession, limit: AdaptiveConcurrency) -> None:
        """Halve the rows in flight when the cluster reports new 429s."""
        seen = 0
        while True:
            await asyncio.sleep(self.state_interval)
            try:
                state = await session.state()
            except Exception:  # the limiter restarting: the next read tells
                continue
            if state.throttled > seen:
                seen = state.throttled
                limit.throttle(state.last_wait)


class _ClusterGate:
    """The driver's gate, with the capacity also held under the cluster's 429 back-off."""

    def __init__(self, gate: Gate, limit: AdaptiveConcurrency) -> None:
        self.gate = gate
        self.limit = limit

    @property
    def capacity(self) -> int:
        return min(self.gate.capacity, self.limit.capacity)

    def may_launch(self, running: int) -> bool:
        return self.gate.may_launch(running)
