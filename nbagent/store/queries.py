"""Store: the history database with what users ask of it, and a writer for each run.

Listing, finding (by id, unique prefix or "the latest"), loading, deleting and
exporting conversations; :meth:`Store.writer` hands the Agent a
:class:`~nbagent.store.writer.RunWriter` per run.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._internal.redaction import Scrubber
from ..errors import ConfigError
from ..messages import Conversation
from .database import Database
from .export import COLUMNS, conversations_frame, export_conversation
from .rows import load_conversation, message_rows
from .writer import RunWriter

if TYPE_CHECKING:
    import pandas

# A run that never finished (kernel died, or the turn got no answer row) lists as
# "interrupted", as Store.load reports it: a NULL here becomes NaN in the DataFrame.
LISTING = """
SELECT c.id, c.title, c.model,
  (SELECT count(*) FROM messages m
     WHERE m.conversation_id = c.id AND m.role = 'user') AS turns,
  (SELECT count(*) FROM rounds r JOIN messages m ON r.message_id = m.id
     WHERE m.conversation_id = c.id) AS rounds,
  (SELECT count(*) FROM tool_calls t JOIN rounds r ON t.round_id = r.id
     JOIN messages m ON r.message_id = m.id
     WHERE m.conversation_id = c.id) AS tool_calls,
  (SELECT coalesce(sum(m.input_tokens), 0) FROM messages m
     WHERE m.conversation_id = c.id) AS input_tokens,
  (SELECT coalesce(sum(m.output_tokens), 0) FROM messages m
     WHERE m.conversation_id = c.id) AS output_tokens,
  coalesce((SELECT CASE WHEN m.finished_at IS NULL THEN 'interrupted' ELSE m.stop_reason END
     FROM messages m
     WHERE m.conversation_id = c.id AND m.role = 'assistant'
     ORDER BY m.position DESC LIMIT 1), 'interrupted') AS stop_reason,
  c.created_at, c.updated_at
FROM conversations c
ORDER BY c.updated_at DESC, c.rowid DESC
LIMIT ?
"""


class Store(Database):
    """The history database: writing runs and reading conversations back.

    It takes the arguments of :class:`~nbagent.store.database.Database`, which
    owns the file (opening, migrations, corruption, transactions).
    """

    # -- writing ---------------------------------------------------------------------

    def writer(
        self,
        conversation: Conversation,
        *,
        secrets: Iterable[str] = (),
        provider: Any = None,
    ) -> RunWriter:
        """A writer for the next run of ``conversation`` (see :class:`RunWriter`).

        ``secrets`` are redacted from everything written, as is an ``api_key``
        attribute of ``provider`` when it has one.
        """
        known = list(secrets)
        key = getattr(provider, "api_key", None)
        if isinstance(key, str):
            known.append(key)
        return RunWriter(self, conversation, Scrubber(known))

    # -- reading ---------------------------------------------------------------------

    def conversations(self, limit: int | None = 20) -> list[dict[str, Any]]:
        """Recent conversations, newest first, as plain dicts (no pandas needed)."""

        def work(db: sqlite3.Connection) -> list[dict[str, Any]]:
            rows = db.execute(LISTING, (-1 if limit is None else limit,)).fetchall()
            return [dict(zip(COLUMNS, row, strict=True)) for row in rows]

        return self.read(work)

    def history(self, *, all: bool = False, limit: int = 20) -> pandas.DataFrame:
        """Recent conversations as a DataFrame (newest first); ``all=True`` lists every one."""
        return conversations_frame(self.conversations(None if all else limit))

    def resolve_id(self, conversation_id: str | None = None) -> str:
        """The full id for an id, a unique prefix of one, or None (the latest conversation).

        Raises:
            ConfigError: no conversation matches, or several do.
        """
        ids = self.read(lambda db: _matching_ids(db, conversation_id))
        if not ids:
            what = "no conversations yet" if conversation_id is None else "no such conversation"
            raise ConfigError(f"{what} in {self.path}: {conversation_id or ''}".rstrip(": "))
        if len(ids) > 1:
            shown = ", ".join(ids[:5])
            raise ConfigError(f"{conversation_id!r} matches several conversations: {shown}")
        return ids[0]

    def load(self, conversation_id: str | None = None) -> Conversation:
        """Rebuild a conversation (messages, rounds, calls, results, provider data).

        ``conversation_id`` may be a unique prefix, or None for the latest one. An
        assistant message whose run never finished (the kernel died) comes back with
        a note as its content and ``stop_reason="interrupted"``; its finished rounds
        are all there.
        """
        full_id = self.resolve_id(conversation_id)
        conversation, rows = self.read(
            lambda db: (load_conversation(db, full_id), message_rows(db, full_id))
        )
        self.claims(full_id, conversation).update(rows)  # rows it may replace when resumed
        return conversation

    def delete(self, conversation_id: str) -> None:
        """Remove one conversation and everything in it."""
        full_id = self.resolve_id(conversation_id)
        self.write(lambda db: db.execute("DELETE FROM conversations WHERE id = ?", (full_id,)))

    def export(self, conversation_id: str | None, path: str | os.PathLike[str]) -> Path:
        """Write a stored conversation to ``path`` (Markdown for ``.md``, else JSON)."""
        return export_conversation(self.load(conversation_id), path)


def _matching_ids(db: sqlite3.Connection, conversation_id: str | None) -> list[str]:
    """The latest id (for None), the exact id, or up to six ids it is a prefix of."""
    if conversation_id is None:
        sql = "SELECT id FROM conversations ORDER BY updated_at DESC, rowid DESC LIMIT 1"
        return [r[0] for r in db.execute(sql)]
    exact = db.execute("SELECT id FROM conversations WHERE id = ?", (conversation_id,))
    found = [r[0] for r in exact]
    if found:
        return found
    pattern = conversation_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    sql = "SELECT id FROM conversations WHERE id LIKE ? ESCAPE '\\' LIMIT 6"
    return [r[0] for r in db.execute(sql, (pattern + "%",))]
