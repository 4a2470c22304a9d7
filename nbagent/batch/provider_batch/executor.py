"""Rows in batch mode: every row launched at once, its model calls answered by jobs.

The driver (:mod:`nbagent.batch.runner`) keeps the journal, the frame, Stop and the
progress as for any executor; this one only runs the rows with :data:`CURRENT_ROW`
set, so :class:`~.provider.BatchedProvider` knows which row asks, and tells the
rounds when a row starts and ends (a round starts once every running row waits).
A row's cost is its requests' price at the batch rate.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

from ..executor import Gate, RowJob, RowOutcome, RowRunner, cancel_rows
from .jobs import BatchRounds
from .provider import CURRENT_ROW, RowSlot

__all__ = ["ProviderBatchExecutor"]


class ProviderBatchExecutor:
    """See the module docstring; ``rounds`` gathers the requests into jobs."""

    def __init__(self, rounds: BatchRounds) -> None:
        self.rounds = rounds

    async def run(
        self, jobs: Iterator[RowJob], run_row: RowRunner, gate: Gate
    ) -> AsyncIterator[RowOutcome]:
        """See :meth:`nbagent.batch.Executor.run` (no concurrency cap: a job holds them all)."""
        running: set[asyncio.Future[RowOutcome]] = set()
        try:
            for job in jobs:
                if not gate.may_launch(0):
                    break
                self.rounds.row_started()
                running.add(asyncio.ensure_future(self._row(job, run_row)))
            while running:
                done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    yield task.result()
        finally:
            await cancel_rows(running)
            self.rounds.close()

    async def _row(self, job: RowJob, run_row: RowRunner) -> RowOutcome:
        slot = RowSlot(job.key)
        token = CURRENT_ROW.set(slot)
        try:
            outcome = await run_row(job)
        finally:
            CURRENT_ROW.reset(token)
            self.rounds.row_finished()
        if outcome.tokens:
            outcome.cost = slot.cost
        return outcome
