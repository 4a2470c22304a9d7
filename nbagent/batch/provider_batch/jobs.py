"""The lifecycle of a batch-mode call: rounds of requests, jobs, polling, results.

Rows run as ordinary agent runs; each model request of a row waits here. When every
row still running is waiting (none is between rounds running its tools), the waiting
requests form one *round*: those a journaled job already holds (an earlier call, a
kernel ago) are collected from that job, the rest are split by the API's count and
size limits into new jobs, which are journaled the moment the API accepts them.
Each job is polled until it ends; its results answer their requests (errored,
expired and cancelled ones become the row's error), and rows needing another tool
round come back with a new request: the next round, a new job.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...errors import ProviderError
from ...providers.batch import BatchApi, JobStatus, Outcome, RequestLine, RequestResult
from ...store.batch_jobs import BatchJobs, JobRequest

__all__ = ["BatchRounds", "JobView"]

logger = logging.getLogger("nbagent")

POLL_RETRIES = 3
"""Failed status requests in a row (429, 5xx, connection) tolerated while a job runs."""


@dataclass
class _Waiting:
    row_key: str
    request: int
    body: dict[str, Any]
    answer: asyncio.Future[tuple[str, str, RequestResult]]
    body_hash: str = ""
    custom_id: str = ""


@dataclass
class JobView:
    """A job of this call as the handle's ``status()`` shows it."""

    job_id: str
    state: str
    requests: int
    round: int
    counts: dict[str, int] = field(default_factory=dict)
    collected_from_journal: bool = False


class BatchRounds:
    """Gathers the rows' requests into jobs (see the module docstring).

    Args:
        api: the provider's batch API.
        model: the model name (for the listing).
        jobs: the journal of jobs (None: no history, nothing survives a restart).
        poll_interval: seconds between status requests of a running job.
        reuse: collect journaled jobs (``resume=True``) instead of sending again.
        max_job_requests: requests per job at most, below the API's own limit.
        sleep: the wait between polls.
    """

    def __init__(
        self,
        api: BatchApi,
        *,
        model: str,
        jobs: BatchJobs | None,
        poll_interval: float = 30.0,
        reuse: bool = True,
        max_job_requests: int | None = None,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        self.api = api
        self.model = model
        self.journal = jobs
        self.poll_interval = poll_interval
        self.reuse = reuse
        self.sleep = sleep
        self.max_requests = min(api.max_requests, max_job_requests or api.max_requests)
        self.active = 0
        self.round = 0
        self.views: dict[str, JobView] = {}
        self._waiting: list[_Waiting] = []
        self._flush: asyncio.Task[None] | None = None
        self._charges: dict[tuple[str, str], float] = {}
        self._basis = "unknown"
        self.cancelled = False
        """Set by :meth:`cancel_jobs`: no new job is submitted, requests get "cancelled"."""

    # -- rows ------------------------------------------------------------------------

    def row_started(self) -> None:
        """A row was launched (a round waits for it too)."""
        self.active += 1

    def row_finished(self) -> None:
        """A row ended; the waiting rows may form a round now."""
        self.active -= 1
        self._check()

    async def ask(
        self, row_key: str, request: int, body: dict[str, Any]
    ) -> tuple[str, str, RequestResult]:
        """(job id, custom id, result) of one row's request, once its job has ended."""
        future: asyncio.Future[tuple[str, str, RequestResult]] = (
            asyncio.get_running_loop().create_future()
        )
        self._waiting.append(_Waiting(row_key, request, body, future))
        self._check()
        return await future

    def charge(self, job_id: str, custom_id: str, cost: float, basis: str) -> None:
        """A collected request's price at the batch rate (journaled with the next round)."""
        self._charges[(job_id, custom_id)] = cost
        self._basis = basis

    # -- rounds ------------------------------------------------------------------------

    def _check(self) -> None:
        """Start a round once every running row waits for the model."""
        # A request whose row was cancelled meanwhile is not sent.
        self._waiting = [w for w in self._waiting if not w.answer.done()]
        if self._flush is not None or not self._waiting or len(self._waiting) < self.active:
            return
        waiting, self._waiting = self._waiting, []
        self._flush = asyncio.ensure_future(self._run_round(waiting))

    async def _run_round(self, waiting: list[_Waiting]) -> None:
        try:
            self.save_costs()
            number = self.round
            self.round += 1
            groups: dict[str, list[_Waiting]] = {}
            fresh: list[_Waiting] = []
            # In row order, not arrival order: the same rows make the same job (a
            # recording replays it; a split falls at the same row).
            for item in sorted(waiting, key=lambda w: (w.row_key, w.request)):
                item.body_hash = _hash(item.body)
                found = self._journaled(item)
                if found is None:
                    item.custom_id = f"r{item.row_key[:40]}-{item.request}"
                    fresh.append(item)
                else:
                    job_id, item.custom_id = found
                    groups.setdefault(job_id, []).append(item)
            for job_id, items in groups.items():
                self.views[job_id] = JobView(
                    job_id, "collecting", len(items), number, collected_from_journal=True
                )
            if fresh and self.cancelled:  # rows back from their tools after a cancel
                self._answer(fresh, "", RequestResult("cancelled", error="the batch was cancelled"))
                fresh = []
            for chunk in self._split(fresh):
                try:
                    status = await self._submit(chunk, number)
                except ProviderError as error:  # the rows fail; the next call sends them again
                    self._answer(chunk, "", RequestResult("errored", error=str(error)))
                    continue
                groups[status.job_id] = chunk
            await asyncio.gather(*(self._finish(job_id, items) for job_id, items in groups.items()))
        except Exception as error:  # a bug or a malformed reply: the rows fail, not the loop
            logger.warning("batch round failed: %s: %s", type(error).__name__, error)
            for item in waiting:
                if not item.answer.done():
                    item.answer.set_exception(error)
        except BaseException:
            for item in waiting:
                item.answer.cancel()
            raise
        finally:
            self._flush = None
            self._check()

    def _journaled(self, item: _Waiting) -> tuple[str, str] | None:
        if not self.reuse or self.journal is None:
            return None
        return self.journal.find(self.api.provider, item.row_key, item.request, item.body_hash)

    def _split(self, items: Sequence[_Waiting]) -> list[list[_Waiting]]:
        """Chunks within the API's per-job request count and size."""
        chunks: list[list[_Waiting]] = []
        current: list[_Waiting] = []
        size = 0
        for item in items:
            item_size = len(json.dumps(item.body, ensure_ascii=False).encode("utf-8")) + 200
            if current and (
                len(current) >= self.max_requests or size + item_size > self.api.max_bytes
            ):
                chunks.append(current)
                current, size = [], 0
            current.append(item)
            size += item_size
        if current:
            chunks.append(current)
        return chunks

    async def _submit(self, chunk: list[_Waiting], number: int) -> JobStatus:
        status = await self.api.submit([RequestLine(i.custom_id, i.body) for i in chunk])
        if self.journal is not None:
            requests = [JobRequest(i.custom_id, i.row_key, i.request, i.body_hash) for i in chunk]
            self.journal.add(
                status.job_id, provider=self.api.provider, model=self.model, state=status.state,
                round=number, requests=requests,
            )  # fmt: skip
        self.views[status.job_id] = JobView(
            status.job_id, status.state, len(chunk), number, status.counts
        )
        logger.info(
            "%s batch job %s: %d requests (round %d)",
            self.api.provider,
            status.job_id,
            len(chunk),
            number,
        )
        return status

    async def _finish(self, job_id: str, items: list[_Waiting]) -> None:
        """Poll the job until it ends, then answer its requests."""
        try:
            status = await self._poll(job_id)
            while not status.ended:
                self._show(status)
                await self.sleep(self.poll_interval)
                status = await self._poll(job_id)
            self._show(status)
            results = await self.api.results(status) if status.state != "failed" else {}
        except ProviderError as error:
            self._answer(items, job_id, RequestResult("errored", error=str(error)))
            return
        outcomes: dict[str, str] = {}
        for item in items:
            result = results.get(item.custom_id) or _missing(status)
            outcomes[item.custom_id] = result.outcome
            if not item.answer.done():
                item.answer.set_result((job_id, item.custom_id, result))
        if self.journal is not None:
            self.journal.set_outcomes(job_id, outcomes)

    async def _poll(self, job_id: str) -> JobStatus:
        """The job's status; a 429, 5xx or dropped connection is asked again, a few times."""
        for attempt in range(POLL_RETRIES + 1):
            try:
                return await self.api.status(job_id)
            except ProviderError as error:
                if not error.retryable or attempt == POLL_RETRIES:
                    raise
                logger.info("batch job %s: status failed (%s), asking again", job_id, error)
                await self.sleep(self.poll_interval)
        raise AssertionError("unreachable")  # pragma: no cover

    def _show(self, status: JobStatus) -> None:
        view = self.views.get(status.job_id)
        if view is not None:
            view.state, view.counts = status.state, status.counts
        if self.journal is not None:
            self.journal.set_state(status.job_id, status.state, ended=status.ended)

    def _answer(self, items: list[_Waiting], job_id: str, result: RequestResult) -> None:
        for item in items:
            if not item.answer.done():
                item.answer.set_result((job_id, item.custom_id, result))

    # -- the end and cancelling ----------------------------------------------------------

    def save_costs(self) -> None:
        """Journal the prices of requests collected since the last save."""
        if self._charges and self.journal is not None:
            self.journal.set_costs(self._charges, self._basis)
        self._charges = {}

    async def cancel_jobs(self) -> bool:
        """Ask the API to cancel every job of this call that has not ended.

        The jobs then end as cancelled: requests they finished keep their answers, the
        others become the rows' ``batch_cancelled`` error, and no new job is submitted.
        Returns False when the API refused a cancel (the batch is then to be stopped).
        """
        self.cancelled = True
        refused = False
        for view in list(self.views.values()):
            if view.state in ("ended", "cancelled", "expired", "failed"):
                continue
            try:
                await self.api.cancel(view.job_id)
            except ProviderError as error:
                logger.warning("could not cancel batch job %s: %s", view.job_id, error)
                refused = True
                continue
            view.state = "cancelling"
            if self.journal is not None:
                self.journal.set_state(view.job_id, "cancelling")
        return not refused

    def close(self) -> None:
        """Journal the last prices and stop a round in flight."""
        self.save_costs()
        if self._flush is not None:
            self._flush.cancel()


def _hash(body: dict[str, Any]) -> str:
    text = json.dumps(body, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _missing(status: JobStatus) -> RequestResult:
    """A request the ended job has no result for."""
    if status.state in ("expired", "cancelled"):
        outcome: Outcome = "expired" if status.state == "expired" else "cancelled"
        return RequestResult(outcome, error=f"the batch job {status.state} before this request ran")
    if status.state == "failed":
        return RequestResult("errored", error="the batch job failed as a whole (validation)")
    return RequestResult("errored", error="the batch job ended without a result for this request")
