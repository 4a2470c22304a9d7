"""``Agent.map(..., mode="batch", wait=False)``: the call returns a handle at once.

The batch runs on nbagent's background loop; the handle reports it, waits for its
frame, or cancels its jobs. After a kernel restart, the same ``map`` call (with or
without ``wait``) collects the jobs this one submitted.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

from ..runner import BatchControl
from .jobs import BatchRounds

__all__ = ["BatchHandle"]


class BatchHandle:
    """A batch-mode ``map`` running in the background."""

    def __init__(
        self,
        future: concurrent.futures.Future[Any],
        control: BatchControl,
        rounds: BatchRounds,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self._future = future
        self._control = control
        self._rounds = rounds
        self._loop = loop

    def status(self) -> dict[str, Any]:
        """``{"done": bool, "rows_waiting": n, "jobs": [{"job_id", "state", "requests", ...}]}``."""
        jobs = [
            {"job_id": v.job_id, "state": v.state, "requests": v.requests, "round": v.round,
             "counts": dict(v.counts), "from_journal": v.collected_from_journal}
            for v in list(self._rounds.views.values())
        ]  # fmt: skip
        return {"done": self._future.done(), "rows_running": self._rounds.active, "jobs": jobs}

    def result(self, timeout: float | None = None) -> Any:
        """The frame, once every job has ended (raises TimeoutError after ``timeout`` s)."""
        return self._future.result(timeout).frame

    def cancel(self) -> None:
        """Cancel the call's jobs at the API; :meth:`result` then returns the partial frame.

        Requests a job finished before the cancel keep their answers; the others, and
        rows that would need another round, get a ``batch_cancelled`` error (and run
        again on the next call). When the API refuses, the call is stopped instead.
        """
        if self._future.done():
            return
        accepted = asyncio.run_coroutine_threadsafe(self._rounds.cancel_jobs(), self._loop)
        if not accepted.result(60):
            self._control.stop()

    def __repr__(self) -> str:
        jobs = self.status()["jobs"]
        states = ", ".join(f"{j['job_id']}: {j['state']}" for j in jobs) or "no job yet"
        return f"<BatchHandle {'done' if self._future.done() else 'running'}; {states}>"
