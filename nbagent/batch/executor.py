"""Where rows run: the executor seam, and the local asyncio executor.

The driver (:mod:`nbagent.batch.runner`) owns the journal, the limits and the
display; an executor only launches row jobs and hands their outcomes back as
they finish. Another engine (Ray, Dask, a provider's batch API) is another class
with the same :meth:`Executor.run`, and the journal stays the driver's.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["Executor", "Gate", "LocalExecutor", "RowJob", "RowOutcome"]


@dataclass
class RowJob:
    """One distinct row to run: its journal key and its filled prompt."""

    key: str
    prompt: str


@dataclass
class RowOutcome:
    """What one row produced (the journal row plus the live value)."""

    key: str
    ok: bool
    value: Any = None
    """The typed value (or the answer text); None when the row failed."""
    output_json: str | None = None
    error: str | None = None
    cost: float | None = None
    tokens: int = 0
    rounds: int = 0
    seconds: float = 0.0
    conversation_id: str | None = None
    result: Any = field(default=None, repr=False)
    """The RunResult, kept only for failed rows (the summary shows their rounds)."""


class Gate(Protocol):
    """What the driver tells an executor before each launch."""

    @property
    def capacity(self) -> int:
        """Rows that may be in flight now."""
        ...

    def may_launch(self, running: int) -> bool:
        """Whether one more row may start (False: stopped or the cost cap is near)."""
        ...


RowRunner = Callable[[RowJob], Awaitable[RowOutcome]]


class Executor(Protocol):
    """Runs row jobs and yields their outcomes as they finish (any order)."""

    def run(
        self, jobs: Iterator[RowJob], run_row: RowRunner, gate: Gate
    ) -> AsyncIterator[RowOutcome]:
        """Launch jobs while ``gate`` allows; stop launching when it says no.

        Closing the iterator cancels the rows in flight. Jobs never launched are
        simply not yielded (the driver marks them "not run").
        """
        ...


class LocalExecutor:
    """Rows as asyncio tasks on the current event loop, sharing one connection pool.

    Args:
        poll: seconds between looks at the gate while rows run (a raised
            concurrency limit or a Stop is noticed within it).
    """

    def __init__(self, *, poll: float = 0.1) -> None:
        self.poll = poll

    async def run(
        self, jobs: Iterator[RowJob], run_row: RowRunner, gate: Gate
    ) -> AsyncIterator[RowOutcome]:
        """See :meth:`Executor.run`."""
        running: set[asyncio.Future[RowOutcome]] = set()
        exhausted = False
        try:
            while True:
                while (
                    not exhausted and len(running) < gate.capacity and gate.may_launch(len(running))
                ):
                    job = next(jobs, None)
                    if job is None:
                        exhausted = True
                        break
                    running.add(asyncio.ensure_future(run_row(job)))
                if not running:
                    return  # all done, or nothing more may start
                done, running = await asyncio.wait(
                    running, timeout=self.poll, return_when=asyncio.FIRST_COMPLETED
                )
                for task in done:
                    yield task.result()
        finally:
            await cancel_rows(running)


async def cancel_rows(running: set[asyncio.Future[RowOutcome]]) -> None:
    """Cancel the rows still running and wait until each has wrapped up (history valid)."""
    for task in running:
        task.cancel()
    for task in running:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
