"""The batch journal: every finished ``Agent.map`` row, saved the moment it finishes.

The journal lives in the history database (table ``batch_rows``, migration 4), so
a batch resumes after a crash, a kernel restart or ``kill -9`` with no setup: the
same call reads the rows its batch already finished and runs only the rest. Each
row is one small transaction (WAL, ``synchronous=NORMAL``), so a crash loses at
most the rows in flight.

A row's ``key`` hashes what decides its answer; ``batch`` hashes what the rows of
one ``map`` call share. Both are computed by :mod:`nbagent.batch.keys`; this
module only stores and reads them.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from .database import Database

__all__ = ["Journal", "JournalRow"]


@dataclass(slots=True)
class JournalRow:
    """One finished row as the journal keeps it."""

    key: str
    ok: bool
    output: str | None
    """The answer as JSON (the typed value dumped, or the text as a JSON string)."""
    error: str | None
    cost: float | None
    tokens: int
    rounds: int
    seconds: float
    conversation_id: str | None


_COLUMNS = "key, ok, output, error, cost, tokens, rounds, seconds, conversation_id"

_UPSERT = f"""
INSERT INTO batch_rows ({_COLUMNS}, batch, finished_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(key) DO UPDATE SET
  ok = excluded.ok, output = excluded.output, error = excluded.error, cost = excluded.cost,
  tokens = excluded.tokens, rounds = excluded.rounds, seconds = excluded.seconds,
  conversation_id = excluded.conversation_id, batch = excluded.batch,
  finished_at = excluded.finished_at
"""


class Journal:
    """The journal of one batch identity in ``database``.

    Args:
        database: the history database (a :class:`~nbagent.store.Store`).
        batch: the batch identity (see :func:`nbagent.batch.keys.batch_identity`).
    """

    def __init__(self, database: Database, batch: str) -> None:
        self.database = database
        self.batch = batch

    def finished(self) -> dict[str, JournalRow]:
        """The rows of this batch that succeeded, by key (failed rows run again).

        An unreadable history counts as an empty journal (its warning says why).
        """

        def work(db: sqlite3.Connection) -> dict[str, JournalRow]:
            cursor = db.execute(
                f"SELECT {_COLUMNS} FROM batch_rows WHERE batch = ? AND ok = 1", (self.batch,)
            )
            return {row[0]: _row(row) for row in cursor}

        try:
            return self.database.read(work)
        except ConfigError:
            return {}

    def save(self, row: JournalRow) -> bool:
        """Journal one finished row in its own transaction; False if history is unavailable."""
        values = (
            row.key, int(row.ok), row.output, row.error, row.cost, row.tokens, row.rounds,
            row.seconds, row.conversation_id, self.batch, self.database.clock(),
        )  # fmt: skip
        return self.database.write(lambda db: db.execute(_UPSERT, values))


def _row(values: tuple[Any, ...]) -> JournalRow:
    # SQLite hands back the stored types already (TEXT, REAL, INTEGER): no conversions,
    # which a resume of 100,000 rows would pay for 100,000 times.
    key, ok, output, error, cost, tokens, rounds, seconds, conversation_id = values
    return JournalRow(key, ok == 1, output, error, cost, tokens, rounds, seconds, conversation_id)
