"""``executor="ray"``: rows on a pool of Ray actors, one agent per actor.

Why actors rather than tasks: a row is a few seconds of waiting on a provider, so
one worker process should run many at once on one event loop and one connection
pool. An async actor does exactly that, and it is where the agent is rebuilt once
(in ``__init__``, from the spec) and reused by every row it runs. A killed actor
process is restarted by Ray (``max_restarts``) and the rows it was running are sent
again to the new process (``max_task_retries``): the engine's retries, never a
dropped row.

Why not Ray Data (``map_batches`` over an actor pool): it owns the pipeline. Rows
go through it in blocks and come back in blocks, so the driver could not journal
each row as it finishes, cancel one row on Stop, hold back launches at the cost
cap, or lower the rows in flight on a 429; and a frame already in the driver's
memory gains nothing from its streaming reads. Here the driver keeps that loop
(:mod:`.cluster`) and sends one actor call per row, to the least loaded actor.

The limiter is one more async actor (no CPU reserved) that every actor's requests
ask (:mod:`.limiter`). Ray is imported only here, when a batch starts; the cluster
is the one the user connected to (``ray.init(address=...)``, ``RAY_ADDRESS``) or,
if none, a local one that ``ray.init`` starts and that stays up for the next map.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Mapping
from typing import Any

from .cluster import ClusterExecutor, ClusterSession
from .limiter import LimiterState, SharedLimiter
from .spec import AgentSpec
from .worker import RemoteRun, WorkerAgent

__all__ = ["RayExecutor"]


class RayExecutor(ClusterExecutor):
    """Run ``Agent.map``'s rows on Ray (``executor=RayExecutor(num_workers=4)``).

    Args:
        num_workers: actors (each a process with the agent and a connection pool);
            None: one per CPU the cluster has, divided by ``num_cpus``.
        num_cpus: CPUs each actor reserves (rows mostly wait: 0.5 packs two per CPU).
        max_restarts: times Ray restarts a killed actor; its rows are sent again.
        init_options: ``ray.init`` keywords, used only when this process has not
            connected to Ray yet (``include_dashboard=False``, ``num_cpus=2``...).
    """

    def __init__(
        self,
        *,
        num_workers: int | None = None,
        num_cpus: float = 1.0,
        max_restarts: int = 3,
        init_options: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.num_workers = num_workers
        self.num_cpus = num_cpus
        self.max_restarts = max_restarts
        self.init_options = dict(init_options or {})

    async def open(self, spec: AgentSpec) -> ClusterSession:
        """Connect, start the limiter and the actors, and wait until each built its agent."""
        # ray.init and the actors' start-up block for seconds: not on nbagent's loop.
        session = await asyncio.to_thread(self._start, spec)
        await session.ready()
        return session

    def _start(self, spec: AgentSpec) -> _RaySession:
        import ray

        if not ray.is_initialized():
            ray.init(**self.init_options)  # RAY_ADDRESS, if set, is the cluster to join
        # Named, so the row actors find it by name: an actor handle among a restartable
        # actor's arguments would live in the object store.
        name = f"nbagent-limiter-{uuid.uuid4().hex}"
        limiter = (
            ray.remote(LimiterActor)
            .options(name=name, num_cpus=0, max_restarts=self.max_restarts)
            .remote(self.rpm, self.tpm)
        )
        count = self.num_workers or max(
            1, int(ray.cluster_resources().get("CPU", 1) // max(self.num_cpus, 0.01))
        )
        actor = ray.remote(RowActor).options(
            num_cpus=self.num_cpus,
            max_restarts=self.max_restarts,
            max_task_retries=self.max_restarts,
        )
        actors = [actor.remote(spec, name) for _ in range(count)]
        return _RaySession(actors, limiter)


class _RaySession:
    """One batch's actors and limiter."""

    def __init__(self, actors: list[Any], limiter: Any) -> None:
        self.actors = actors
        self.limiter = limiter
        self.load = [0] * len(actors)
        """Rows in flight on each actor (a row goes to the least loaded)."""

    async def ready(self) -> None:
        await asyncio.gather(*(_wait(a.pid.remote()) for a in self.actors))

    async def run(self, prompt: str, conversation_id: str, *, keep_messages: bool) -> RemoteRun:
        import ray

        index = self.load.index(min(self.load))
        self.load[index] += 1
        ref = self.actors[index].run.remote(prompt, conversation_id, keep_messages)
        try:
            run: RemoteRun = await _wait(ref)
            return run
        except asyncio.CancelledError:
            ray.cancel(ref)
            raise
        finally:
            self.load[index] -= 1

    async def state(self) -> LimiterState:
        state: LimiterState = await _wait(self.limiter.state.remote())
        return state

    async def close(self) -> None:
        import ray

        for handle in (*self.actors, self.limiter):
            ray.kill(handle)


async def _wait(ref: Any) -> Any:
    """An ObjectRef's value, awaited on the current loop (whichever thread runs it)."""
    return await asyncio.wrap_future(ref.future())


class LimiterActor:
    """The batch's :class:`~.limiter.SharedLimiter`, as a Ray actor."""

    def __init__(self, rpm: float | None, tpm: float | None) -> None:
        self.limiter = SharedLimiter(rpm, tpm)

    async def admit(self, tokens: int) -> None:
        await self.limiter.admit(tokens)

    async def throttle(self, wait: float | None) -> None:
        self.limiter.throttle(wait)

    async def state(self) -> LimiterState:
        return self.limiter.state()


class _RayLimiterCalls:
    """:class:`~.limiter.LimiterCalls` as calls to the limiter actor (found by name)."""

    def __init__(self, name: str) -> None:
        import ray

        self.limiter = ray.get_actor(name)

    async def admit(self, tokens: int) -> None:
        await self.limiter.admit.remote(tokens)

    async def throttle(self, wait: float | None) -> None:
        await self.limiter.throttle.remote(wait)


class RowActor:
    """A Ray actor running rows: the agent built once, many rows at once on its loop."""

    def __init__(self, spec: AgentSpec, limiter: str) -> None:
        self.agent = WorkerAgent(spec, _RayLimiterCalls(limiter))

    async def pid(self) -> int:
        """This actor's process id (the batch waits on it: the agent is built)."""
        return os.getpid()

    async def run(self, prompt: str, conversation_id: str, keep_messages: bool) -> RemoteRun:
        return await self.agent.run(prompt, conversation_id, keep_messages=keep_messages)
