"""Provider batch jobs in the history database (tables of migration 5).

``Agent.map(..., mode="batch")`` sends its rows' requests through a provider's batch
API. Every job the API accepts is written here at once, with the requests in it
(``custom_id`` -> the row's journal key and request number, and a hash of the body),
so the same call after a kernel restart finds the job and collects its results
instead of paying for the requests again. Requests that errored or expired are
marked so, and the next call sends them again.

This module only stores and reads; :mod:`nbagent.batch.provider_batch` decides.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..errors import ConfigError
from .database import Database

__all__ = ["BatchJobs", "JobListing", "JobRequest", "REUSABLE_OUTCOMES"]

REUSABLE_OUTCOMES = (None, "succeeded")
"""Outcomes of a journaled request that a later call collects instead of resending:
not collected yet (the job may still run) or succeeded."""


@dataclass(frozen=True, slots=True)
class JobRequest:
    """One request of a job: which row asked, and for which of its requests."""

    custom_id: str
    row_key: str
    request: int
    """The row's request number (0: its first model request; 1: after its first tool round)."""
    body_hash: str


@dataclass(frozen=True, slots=True)
class JobListing:
    """One job as ``%agent batches`` lists it."""

    job_id: str
    provider: str
    model: str
    state: str
    round: int
    requests: int
    succeeded: int
    failed: int
    cost: float | None
    price_basis: str | None
    created_at: float
    ended_at: float | None


class BatchJobs:
    """The batch jobs of one history database (a :class:`~nbagent.store.Store`)."""

    def __init__(self, database: Database) -> None:
        self.database = database

    def add(
        self,
        job_id: str,
        *,
        provider: str,
        model: str,
        state: str,
        round: int,
        requests: Iterable[JobRequest],
        price_basis: str | None = None,
    ) -> bool:
        """Journal a job the API accepted, with its requests, in one transaction."""
        rows = [(job_id, r.custom_id, r.row_key, r.request, r.body_hash) for r in requests]
        now = self.database.clock()

        def work(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT OR REPLACE INTO batch_jobs (job_id, provider, model, state, round, "
                "requests, price_basis, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (job_id, provider, model, state, round, len(rows), price_basis, now),
            )
            db.executemany(
                "INSERT OR REPLACE INTO batch_job_requests (job_id, custom_id, row_key, "
                "request, body_hash) VALUES (?, ?, ?, ?, ?)",
                rows,
            )

        return self.database.write(work)

    def set_state(self, job_id: str, state: str, *, ended: bool = False) -> bool:
        """The job's latest state (``ended``: stamp the time it ended, once)."""
        if ended:
            sql = "UPDATE batch_jobs SET state = ?, ended_at = COALESCE(ended_at, ?) "
            values: tuple[object, ...] = (state, self.database.clock(), job_id)
        else:
            sql, values = "UPDATE batch_jobs SET state = ? ", (state, job_id)
        return self.database.write(lambda db: db.execute(sql + "WHERE job_id = ?", values))

    def set_outcomes(self, job_id: str, outcomes: Mapping[str, str]) -> bool:
        """Each collected request's outcome (succeeded, errored, expired, cancelled)."""
        rows = [(outcome, job_id, custom_id) for custom_id, outcome in outcomes.items()]
        return self.database.write(
            lambda db: db.executemany(
                "UPDATE batch_job_requests SET outcome = ? WHERE job_id = ? AND custom_id = ?",
                rows,
            )
        )

    def set_costs(self, costs: Mapping[tuple[str, str], float], price_basis: str) -> bool:
        """The batch-rate price of collected requests, by (job id, custom id)."""
        rows = [(cost, job_id, custom_id) for (job_id, custom_id), cost in costs.items()]
        jobs = [(price_basis, job_id) for job_id in {job for job, _ in costs}]

        def work(db: sqlite3.Connection) -> None:
            db.executemany(
                "UPDATE batch_job_requests SET cost = ? WHERE job_id = ? AND custom_id = ?",
                rows,
            )
            db.executemany("UPDATE batch_jobs SET price_basis = ? WHERE job_id = ?", jobs)

        return self.database.write(work)

    def find(
        self, provider: str, row_key: str, request: int, body_hash: str
    ) -> tuple[str, str] | None:
        """(job id, custom id) of a journaled request with this body that may be collected.

        The newest job wins; a request that errored, expired or was cancelled is not
        returned (it is to be sent again), nor an uncollected one of a job that failed,
        expired or was cancelled as a whole.
        """

        def work(db: sqlite3.Connection) -> tuple[str, str] | None:
            row = db.execute(
                "SELECT r.job_id, r.custom_id FROM batch_job_requests r "
                "JOIN batch_jobs j ON j.job_id = r.job_id "
                "WHERE r.row_key = ? AND r.request = ? AND r.body_hash = ? AND j.provider = ? "
                "AND (r.outcome = 'succeeded' OR (r.outcome IS NULL "
                "AND j.state NOT IN ('failed', 'cancelled', 'expired'))) "
                "ORDER BY j.created_at DESC LIMIT 1",
                (row_key, request, body_hash, provider),
            ).fetchone()
            return None if row is None else (str(row[0]), str(row[1]))

        try:
            return self.database.read(work)
        except ConfigError:
            return None

    def listing(self, limit: int = 50) -> list[JobListing]:
        """The newest jobs first, with their request counts and cost so far."""

        def work(db: sqlite3.Connection) -> list[JobListing]:
            cursor = db.execute(
                "SELECT j.job_id, j.provider, j.model, j.state, j.round, j.requests, "
                "SUM(r.outcome = 'succeeded'), "
                "SUM(r.outcome IS NOT NULL AND r.outcome != 'succeeded'), "
                "SUM(r.cost), j.price_basis, j.created_at, j.ended_at "
                "FROM batch_jobs j LEFT JOIN batch_job_requests r ON r.job_id = j.job_id "
                "GROUP BY j.job_id ORDER BY j.created_at DESC, j.job_id LIMIT ?",
                (limit,),
            )
            return [
                JobListing(
                    str(job_id),
                    str(provider),
                    str(model),
                    str(state),
                    int(round_),
                    int(requests),
                    int(ok or 0),
                    int(failed or 0),
                    cost,
                    basis,
                    created,
                    ended,
                )  # fmt: skip
                for (
                    job_id,
                    provider,
                    model,
                    state,
                    round_,
                    requests,
                    ok,
                    failed,
                    cost,
                    basis,
                    created,
                    ended,
                ) in cursor  # fmt: skip
            ]

        try:
            return self.database.read(work)
        except ConfigError:
            return []
