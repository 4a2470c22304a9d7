"""``executor="dask"``: rows as Dask tasks, one agent per worker process, cached by spec.

Why tasks and a per-process cache rather than Dask actors: an actor lives on one
worker and dies with it, with no retry, while a task on a worker that dies is run
again on another by the scheduler (``distributed.scheduler.allowed-failures``):
the engine's retries, never a dropped row. The spec is scattered to every worker
once; the first row a worker process runs builds the agent (and its connection
pool) and later rows reuse it (:func:`~.worker.cached_agent`, keyed by the spec's
digest and the batch). A task runs its row on the process's nbagent event loop and
holds its worker thread until the row ends, so a worker runs as many rows at
once as it has threads (``LocalCluster(threads_per_worker=8)`` for I/O-bound rows).

The client is the one the user made (``Client(...)``: the current client), else a
``LocalCluster`` started here and kept for the next map. The limiter is a scheduler
plugin (:mod:`.dask_plugin`).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable
from typing import Any

from .cluster import ClusterExecutor, ClusterSession
from .limiter import LimiterState
from .spec import AgentSpec
from .worker import RemoteRun, cached_agent

__all__ = ["DaskExecutor", "run_dask_row"]

_OWN_CLIENT: list[Any] = []
"""The client of the LocalCluster started here when there was none (kept for the next map)."""


class DaskExecutor(ClusterExecutor):
    """Run ``Agent.map``'s rows on Dask (``executor=DaskExecutor(client=client)``).

    Args:
        client: the ``distributed.Client`` to use; None: the current client, else a
            ``LocalCluster`` started on first use.
        n_workers: worker processes of that LocalCluster (None: Dask's default).
        threads_per_worker: its threads per worker: the rows each runs at once.
    """

    def __init__(
        self,
        *,
        client: Any = None,
        n_workers: int | None = None,
        threads_per_worker: int | None = None,
    ) -> None:
        super().__init__()
        self.client = client
        self.n_workers = n_workers
        self.threads_per_worker = threads_per_worker

    async def open(self, spec: AgentSpec) -> ClusterSession:
        """Find or start the client, register the limiter, scatter the spec."""
        return await asyncio.to_thread(self._start, spec)

    def _start(self, spec: AgentSpec) -> _DaskSession:
        from .dask_plugin import LimiterPlugin

        client = self.client or _current_client() or self._local_client()
        client.register_plugin(LimiterPlugin())
        name = f"nbagent-{uuid.uuid4().hex}"
        session = _DaskSession(client, name)
        session.call_sync("nbagent_limiter_open", rpm=self.rpm, tpm=self.tpm)
        session.spec = client.scatter(spec, broadcast=True, hash=False)
        return session

    def _local_client(self) -> Any:
        if not _OWN_CLIENT:
            from distributed import Client, LocalCluster

            cluster = LocalCluster(
                n_workers=self.n_workers,
                threads_per_worker=self.threads_per_worker,
                processes=True,
                dashboard_address=":0",  # any free port: 8787 may be taken
            )
            _OWN_CLIENT.append(Client(cluster))
        return _OWN_CLIENT[0]


def _current_client() -> Any:
    from distributed import default_client

    try:
        return default_client()
    except ValueError:  # no client in this process
        return None


class _DaskSession:
    """One batch's scattered spec and limiter name on a Dask client."""

    def __init__(self, client: Any, name: str) -> None:
        self.client = client
        self.name = name
        self.spec: Any = None

    def call_sync(self, op: str, **arguments: Any) -> Any:
        """A limiter handler on the scheduler, from a thread that is not the client's loop."""
        future = asyncio.run_coroutine_threadsafe(
            getattr(self.client.scheduler, op)(name=self.name, **arguments),
            self.client.loop.asyncio_loop,
        )
        return future.result()

    def _call(self, op: str, **arguments: Any) -> Awaitable[Any]:
        return _on_loop(
            self.client.loop.asyncio_loop,
            getattr(self.client.scheduler, op)(name=self.name, **arguments),
        )

    async def run(self, prompt: str, conversation_id: str, *, keep_messages: bool) -> RemoteRun:
        future = self.client.submit(
            run_dask_row, self.spec, self.name, prompt, conversation_id, keep_messages,
            key=f"nbagent-row-{conversation_id}", pure=False,
        )  # fmt: skip
        loop = asyncio.get_running_loop()
        try:
            finished = loop.create_future()
            # Called on Dask's callback thread when the task ends (or errs, or is cancelled).
            future.add_done_callback(lambda _: loop.call_soon_threadsafe(_settle, finished))
            await finished
            run: RemoteRun = await asyncio.to_thread(future.result)
            return run
        except asyncio.CancelledError:
            loop.run_in_executor(None, future.cancel)  # the client blocks: off this loop
            raise

    async def state(self) -> LimiterState:
        throttled, last_wait = await self._call("nbagent_limiter_state")
        return LimiterState(throttled, last_wait)

    async def close(self) -> None:
        await self._call("nbagent_limiter_close")
        await asyncio.to_thread(self.client.cancel, [self.spec])


def _settle(finished: asyncio.Future[None]) -> None:
    if not finished.done():
        finished.set_result(None)


async def _on_loop(loop: asyncio.AbstractEventLoop, coroutine: Any) -> Any:
    """Await ``coroutine`` on ``loop`` (Dask's RPC runs on its own loop) from this one."""
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, loop))


class _DaskLimiterCalls:
    """:class:`~.limiter.LimiterCalls` as RPCs to the scheduler, from a worker."""

    def __init__(self, worker: Any, name: str) -> None:
        self.worker = worker
        self.name = name

    def _call(self, op: str, **arguments: Any) -> Awaitable[Any]:
        call = getattr(self.worker.scheduler, op)(name=self.name, **arguments)
        return _on_loop(self.worker.loop.asyncio_loop, call)

    async def admit(self, tokens: int) -> None:
        await self._call("nbagent_limiter_admit", tokens=tokens)

    async def throttle(self, wait: float | None) -> None:
        await self._call("nbagent_limiter_throttle", wait=wait)


def run_dask_row(
    spec: AgentSpec, limiter: str, prompt: str, conversation_id: str, keep_messages: bool
) -> RemoteRun:
    """The task of one row, on a Dask worker (see the module docstring)."""
    from distributed import get_worker

    from ..._internal.threads import background_loop

    worker = get_worker()
    agent = cached_agent(spec, limiter, lambda: _DaskLimiterCalls(worker, limiter))
    running = agent.run(prompt, conversation_id, keep_messages=keep_messages)
    return asyncio.run_coroutine_threadsafe(running, background_loop()).result()
