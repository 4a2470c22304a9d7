"""SQLite history: conversations, messages, tool rounds, calls and results.

One file, ``history.db``, under the user data directory (``NBAGENT_HOME``
moves it; ``NBAGENT_HISTORY=off`` or ``Agent(store=None)`` turns history off),
shared by every kernel on the machine::

    nbagent.history()                      # DataFrame of recent conversations
    agent = Agent.resume("c_3f2a")         # continue one after a kernel restart
    default_store().load("c_3f2a").to_markdown()   # or read it back

How writes happen: an :class:`Agent` asks :meth:`Store.writer` for a
:class:`RunWriter` per run. The writer saves the user message when the run
starts, each finished round in its own transaction before the next model
request, and the answer when the run ends, so a crash (even ``kill -9``) loses
at most the round in flight.

Robustness rules: the file is opened lazily on first use (creating an Agent
costs no I/O); WAL mode, a busy timeout and ``BEGIN IMMEDIATE`` let several
kernels write at once; a corrupt file is moved aside with a warning and a new
one is started; any other database failure becomes a :class:`HistoryWarning`,
never an exception in the user's run. Secrets never reach the file: the
agent's API key and the values of key-like environment variables are replaced
by ``[redacted]`` in everything written, and text that looks like a key is too.
"""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import threading
import time
import warnings
from collections import ChainMap
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._migrations import SCHEMA_VERSION, NewerSchemaError, migrate
from ._store_rows import INTERRUPTED_NOTE, insert_message, insert_round, load_conversation
from .redaction import REDACTED, Scrubber, collect_secrets, scrub_optional
from .values import PREVIEW_CHARS, preview_value
from .errors import ConfigError
from .events import Event, RoundFinished, RunFinished
from .messages import Conversation, Message

if TYPE_CHECKING:
    import pandas

    from .results import RunResult
    from .providers.base import ModelRequest, Provider, ProviderEvent

__all__ = [
    "INTERRUPTED_NOTE",
    "PREVIEW_CHARS",
    "REDACTED",
    "SCHEMA_VERSION",
    "HistoryWarning",
    "RunWriter",
    "Scrubber",
    "Store",
    "collect_secrets",
    "default_store",
    "export_conversation",
    "history",
    "history_path",
    "last_model",
    "preview_value",
    "resolve_store",
]

logger = logging.getLogger("nbagent")

FILENAME = "history.db"

_OFF = {"0", "off", "false", "no", "none", "disabled"}


class HistoryWarning(UserWarning):
    """History could not be written or read; the run itself is unaffected."""


# -- where the file lives ------------------------------------------------------------


def history_path(env: Mapping[str, str] | None = None) -> Path | None:
    """The default database path, or None when ``NBAGENT_HISTORY`` turns history off.

    ``env`` (an Agent's ``env=``) is consulted first, then the process environment:
    an ``env=`` given to isolate keys must not move the history file by accident.
    """
    env = os.environ if env is None else ChainMap(dict(env), dict(os.environ))
    if env.get("NBAGENT_HISTORY", "").strip().lower() in _OFF:
        return None
    home = env.get("NBAGENT_HOME")
    if home:
        return Path(home).expanduser() / FILENAME
    import platformdirs

    return Path(platformdirs.user_data_dir("nbagent", appauthor=False)) / FILENAME


_defaults: dict[Path, Store] = {}
_defaults_lock = threading.Lock()


def default_store(env: Mapping[str, str] | None = None) -> Store | None:
    """The shared Store of this process for the default path (no file I/O until first use)."""
    path = history_path(env)
    if path is None:
        return None
    with _defaults_lock:
        store = _defaults.get(path)
        if store is None:
            store = _defaults[path] = Store(path)
        return store


def resolve_store(store: Any, env: Mapping[str, str] | None = None) -> Store | None:
    """What ``Agent(store=...)`` means: a Store, a path, None (off) or ``"default"``."""
    if store is None:
        return None
    if isinstance(store, Store):
        return store
    if isinstance(store, str) and store == "default":
        return default_store(env)
    if isinstance(store, (str, os.PathLike)):
        return Store(store)
    raise ConfigError(f"store= takes a path, a Store or None, not {type(store).__name__}")


# -- the store -----------------------------------------------------------------------


class Store:
    """The history database.

    Args:
        path: the SQLite file (created with its folder on first write).
        busy_timeout: seconds to wait for another kernel's write before giving up.
        clock: returns the time in seconds since the epoch (tests inject one).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path).expanduser()
        self.busy_timeout = busy_timeout
        self.clock = clock
        self.generation = 0
        """Bumped when a corrupt file is replaced, so writers rewrite what they had saved."""
        self._db: sqlite3.Connection | None = None
        self._disabled: str | None = None
        # One connection shared by the kernel's threads (the sync API runs the loop
        # in a background thread); the lock serialises its use.
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __del__(self) -> None:
        # A forgotten Store must not leave its connection to the garbage collector
        # (which warns about it in newer Pythons).
        db = getattr(self, "_db", None)
        if db is not None:
            try:
                db.close()
            except Exception:
                pass

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- connection ------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection | None:
        """The open connection, opening (and if need be migrating or replacing) the file."""
        if self._db is not None:
            return self._db
        if self._disabled:
            return None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._db = self._open_when_free()
            except sqlite3.DatabaseError as error:
                if not _is_corrupt(error):
                    raise
                self._move_aside(error)
                if self._disabled:
                    return None
                self._db = self._open_when_free()
        except NewerSchemaError as error:
            self._disable(str(error))
        except OSError as error:  # the folder cannot be made: it will not fix itself
            self._disable(str(error))
        except sqlite3.Error as error:
            # Not remembered: a locked file may work next time.
            _warn(f"nbagent history unavailable ({self.path}): {error}")
        return self._db

    def _open_when_free(self) -> sqlite3.Connection:
        """:meth:`_open`, retried while another process holds the file.

        Two kernels opening a new file at once race on switching it to WAL and on the
        first migration; SQLite reports some of those collisions as "database is
        locked" at once, without calling the busy handler, so wait and retry here.
        """
        deadline = time.monotonic() + self.busy_timeout
        while True:
            try:
                return self._open()
            except sqlite3.OperationalError as error:
                if not _is_busy(error) or time.monotonic() > deadline:
                    raise
                time.sleep(random.uniform(0.01, 0.1))

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(
            self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
        )
        try:
            db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            db.execute("PRAGMA foreign_keys = ON")
            # Checked before anything changes the file (WAL mode would rewrite its header).
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise NewerSchemaError(version)
            if db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                db.execute("PRAGMA journal_mode = WAL")
            # In WAL mode NORMAL survives an application crash (kill -9); only a power
            # cut can lose the last commits, and it never corrupts the file.
            db.execute("PRAGMA synchronous = NORMAL")
            migrate(db)
            db.execute("SELECT count(*) FROM conversations").fetchone()
        except BaseException:
            db.close()
            raise
        return db

    def _disable(self, reason: str) -> None:
        self._disabled = reason
        _warn(f"nbagent history is off for {self.path}: {reason}")

    def _move_aside(self, error: BaseException) -> None:
        """Rename a corrupt file (and its WAL) out of the way so a new one can start."""
        if self._db is not None:
            try:
                self._db.close()
            except sqlite3.Error:
                pass
            self._db = None
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(self.clock()))
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        try:
            for suffix in ("", "-wal", "-shm"):
                source = Path(str(self.path) + suffix)
                if source.exists():
                    os.replace(source, Path(str(target) + suffix))
        except OSError as move_error:
            self._disable(f"the file is unreadable ({error}) and cannot be moved ({move_error})")
            return
        self.generation += 1
        _warn(
            f"nbagent history file {self.path} was unreadable ({error}); "
            f"moved it to {target.name} and started a new one"
        )

    # -- transactions ----------------------------------------------------------------

    def _write(self, work: Callable[[sqlite3.Connection], None]) -> bool:
        """Run ``work`` in one write transaction. Returns False (after a warning) on failure."""
        with self._lock:
            db = self._connection()
            if db is None:
                return False
            try:
                self._transaction(db, work)
                return True
            except sqlite3.DatabaseError as error:
                if _is_corrupt(error):
                    self._move_aside(error)  # the writer sees the new generation and rewrites
                else:
                    _warn(f"nbagent history not saved ({self.path}): {error}")
            except Exception as error:  # a bug here must not end the user's run
                logger.exception("history write failed")
                _warn(f"nbagent history not saved ({self.path}): {error!r}")
            return False

    def _transaction(
        self, db: sqlite3.Connection, work: Callable[[sqlite3.Connection], None]
    ) -> None:
        # BEGIN IMMEDIATE takes the write lock up front: a deferred transaction that
        # read first could fail with SQLITE_BUSY at its first write, which the busy
        # handler cannot retry. The loop covers the rare busy that slips through.
        deadline = time.monotonic() + self.busy_timeout
        while True:
            try:
                db.execute("BEGIN IMMEDIATE")
                break
            except sqlite3.OperationalError as error:
                if not _is_busy(error) or time.monotonic() > deadline:
                    raise
                time.sleep(random.uniform(0.005, 0.05))
        try:
            work(db)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def _read(self, work: Callable[[sqlite3.Connection], Any]) -> Any:
        """Run ``work`` on one consistent snapshot (a read transaction)."""
        with self._lock:
            db = self._connection()
            if db is None:
                reason = self._disabled or "see the warning above"
                raise ConfigError(f"nbagent history is unavailable ({self.path}): {reason}")
            db.execute("BEGIN")
            try:
                return work(db)
            finally:
                db.execute("COMMIT")

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
            rows = db.execute(
                """
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
                  (SELECT m.stop_reason FROM messages m
                     WHERE m.conversation_id = c.id AND m.role = 'assistant'
                     ORDER BY m.position DESC LIMIT 1) AS stop_reason,
                  c.created_at, c.updated_at
                FROM conversations c
                ORDER BY c.updated_at DESC, c.rowid DESC
                LIMIT ?
                """,
                (-1 if limit is None else limit,),
            ).fetchall()
            names = [
                "id", "title", "model", "turns", "rounds", "tool_calls",
                "input_tokens", "output_tokens", "stop_reason", "created", "updated",
            ]  # fmt: skip
            return [dict(zip(names, row, strict=True)) for row in rows]

        result: list[dict[str, Any]] = self._read(work)
        return result

    def history(self, *, all: bool = False, limit: int = 20) -> pandas.DataFrame:
        """Recent conversations as a DataFrame (newest first); ``all=True`` lists every one."""
        import pandas as pd

        rows = self.conversations(None if all else limit)
        columns = [
            "id", "title", "model", "turns", "rounds", "tool_calls",
            "input_tokens", "output_tokens", "stop_reason", "created", "updated",
        ]  # fmt: skip
        frame = pd.DataFrame(rows, columns=columns)
        for column in ("created", "updated"):
            frame[column] = pd.to_datetime(frame[column], unit="s", utc=True)
        return frame

    def resolve_id(self, conversation_id: str | None = None) -> str:
        """The full id for an id, a unique prefix of one, or None (the latest conversation)."""

        def work(db: sqlite3.Connection) -> list[str]:
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

        ids: list[str] = self._read(work)
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
        loaded: Conversation = self._read(lambda db: load_conversation(db, full_id))
        return loaded

    def delete(self, conversation_id: str) -> None:
        """Remove one conversation and everything in it."""
        full_id = self.resolve_id(conversation_id)

        def work(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM conversations WHERE id = ?", (full_id,))

        self._write(work)

    def export(self, conversation_id: str | None, path: str | os.PathLike[str]) -> Path:
        """Write a stored conversation to ``path`` (Markdown for ``.md``, else JSON)."""
        return export_conversation(self.load(conversation_id), path)

    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check`` ("ok" when the file is sound)."""
        rows = self._read(lambda db: db.execute("PRAGMA integrity_check").fetchall())
        return "\n".join(str(r[0]) for r in rows)


def history(
    *, all: bool = False, limit: int = 20, store: Store | str | os.PathLike[str] | None = None
) -> pandas.DataFrame:
    """Conversations in the history database as a DataFrame, newest first.

    Columns: id, title (the first prompt), model, turns, rounds, tool_calls,
    input_tokens, output_tokens, stop_reason (of the last run), created, updated (UTC).
    """
    chosen = default_store() if store is None else resolve_store(store)
    if chosen is None:
        raise ConfigError("nbagent history is off (NBAGENT_HISTORY); unset it to keep history.")
    return chosen.history(all=all, limit=limit)


def last_model(conversation: Conversation) -> str | None:
    """The model label the conversation's latest answer came from (for resuming it)."""
    return next((m.model for m in reversed(conversation.messages) if m.model), None)


def export_conversation(conversation: Conversation, path: str | os.PathLike[str]) -> Path:
    """Write ``conversation`` to ``path``: Markdown if it ends in ``.md``, JSON otherwise."""
    target = Path(path).expanduser()
    is_markdown = target.suffix.lower() in (".md", ".markdown")
    text = conversation.to_markdown() if is_markdown else conversation.to_json(indent=2)
    target.write_text(text + ("" if text.endswith("\n") else "\n"), encoding="utf-8")
    return target


# -- the writer of one run -------------------------------------------------------------


class RunWriter:
    """Saves one run as it goes. Every method is safe to call repeatedly; none raises.

    The Agent calls :meth:`checkpoint` before each model request (through
    :meth:`wrap`) and on each RoundFinished event, and :meth:`finish` with the
    RunResult. A checkpoint writes the run's user message and the assistant message
    (unfinished) the first time, then every round finished since the last one, each
    call in one transaction.
    """

    def __init__(self, store: Store, conversation: Conversation, scrubber: Scrubber) -> None:
        self.store = store
        self.conversation = conversation
        self._scrub = scrubber
        self._message: Message | None = None
        self._message_row: int | None = None
        self._rounds_written = 0
        self._generation = store.generation
        self._finished = False
        self._pending_state: tuple[int, int] | None = None

    def wrap(self, provider: Provider) -> Provider:
        """``provider``, checkpointing before each of its requests."""
        return _CheckpointingProvider(provider, self)

    def on_event(self, event: Event) -> None:
        """Save what ``event`` completes: a round, or the whole run."""
        if isinstance(event, RoundFinished):
            self.checkpoint(upto=event.round_index + 1)
        elif isinstance(event, RunFinished):
            self.finish(event.result)

    def checkpoint(self, upto: int | None = None) -> None:
        """Save the rounds of the current run finished so far (``upto``: how many are)."""
        if self._finished:
            return
        message = self._current_message()
        if message is None:
            return
        count = len(message.rounds or []) if upto is None else upto
        if self._message_row is not None and count <= self._rounds_written:
            return
        self._save(lambda db: self._write_progress(db, message, count, finished=None))

    def finish(self, result: RunResult) -> None:
        """Save the rest of the run and its answer, stop reason, usage and duration."""
        if self._finished:
            return
        message = result.message or self._current_message()
        if message is None:
            return
        self._message = message
        count = len(message.rounds or [])
        self._save(lambda db: self._write_progress(db, message, count, finished=result))
        self._finished = True

    # -- steps -----------------------------------------------------------------------

    def _current_message(self) -> Message | None:
        if self._message is None:
            messages = self.conversation.messages
            if len(messages) < 2 or messages[-1].role != "assistant":
                return None
            self._message = messages[-1]
        return self._message

    def _save(self, work: Callable[[sqlite3.Connection], None]) -> None:
        for _ in range(2):
            if self._generation != self.store.generation:
                # The file was replaced: everything must be written again.
                self._generation = self.store.generation
                self._message_row = None
                self._rounds_written = 0
            started = time.perf_counter()
            self._pending_state = None
            if self.store._write(work):
                if self._pending_state is not None:
                    self._message_row, self._rounds_written = self._pending_state
                logger.debug("history write took %.2f ms", (time.perf_counter() - started) * 1e3)
                return
            if self._generation == self.store.generation:
                return  # a failure already reported; the run goes on without history

    def _write_progress(
        self, db: sqlite3.Connection, message: Message, count: int, finished: RunResult | None
    ) -> None:
        now = self.store.clock()
        # State changes only after the whole body ran: a rollback must leave it as it was.
        message_row, written = self._message_row, self._rounds_written
        if message_row is None:
            message_row, written = self._write_start(db, message, now), 0
        rounds = message.rounds or []
        for position in range(written, min(count, len(rounds))):
            insert_round(db, self._scrub, message_row, position, rounds[position], now)
        if finished is not None:
            self._write_answer(db, message_row, message, finished, now)
        # Adopted by _save only once COMMIT succeeded.
        self._pending_state = (message_row, max(written, min(count, len(rounds))))

    def _write_start(self, db: sqlite3.Connection, message: Message, now: float) -> int:
        """Upsert the conversation; write earlier messages the file lacks, then this run's two."""
        conversation = self.conversation
        position = _index_of(conversation.messages, message)
        scrub = self._scrub.text
        first_user = next((m.content for m in conversation.messages if m.role == "user"), "")
        db.execute(
            """
            INSERT INTO conversations (id, title, system, model, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (id) DO UPDATE SET
              system = excluded.system, model = excluded.model, updated_at = excluded.updated_at,
              title = coalesce(conversations.title, excluded.title)
            """,
            (
                conversation.id,
                _title(scrub(first_user)),
                scrub_optional(scrub, conversation.system),
                message.model,
                now,
                now,
            ),
        )
        # Messages before this run that the file holds complete are trusted; anything
        # from the first gap (or unfinished one) onwards is replaced from memory.
        trusted = db.execute(
            """
            SELECT count(*) FROM messages
            WHERE conversation_id = ? AND position < ? AND finished_at IS NOT NULL
              AND position < coalesce((SELECT min(position) FROM messages
                                       WHERE conversation_id = ? AND finished_at IS NULL), ?)
            """,
            (conversation.id, position, conversation.id, position),
        ).fetchone()[0]
        db.execute(
            "DELETE FROM messages WHERE conversation_id = ? AND position >= ?",
            (conversation.id, trusted),
        )
        for index in range(trusted, position):
            insert_message(
                db, self._scrub, conversation.id, index, conversation.messages[index], now
            )
        return insert_message(
            db, self._scrub, conversation.id, position, message, now, finished=False
        )

    def _write_answer(
        self,
        db: sqlite3.Connection,
        message_row: int,
        message: Message,
        result: RunResult,
        now: float,
    ) -> None:
        usage = result.usage
        db.execute(
            """
            UPDATE messages SET content = ?, stop_reason = ?, model = ?, input_tokens = ?,
              output_tokens = ?, provider_data = ?, duration_s = ?, finished_at = ?
            WHERE id = ?
            """,
            (
                self._scrub.text(message.content),
                result.stop_reason,
                result.model,
                usage.input_tokens,
                usage.output_tokens,
                self._scrub.json(message.provider_data),
                result.elapsed_s,
                now,
                message_row,
            ),
        )
        db.execute(
            "UPDATE conversations SET updated_at = ?, model = ? WHERE id = ?",
            (now, result.model, self.conversation.id),
        )


class _CheckpointingProvider:
    """A provider that saves finished rounds before each request it forwards."""

    def __init__(self, inner: Provider, writer: RunWriter) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self._writer = writer

    def __repr__(self) -> str:
        return repr(self.inner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        self._writer.checkpoint()
        async for event in self.inner.stream(request):
            yield event

    async def aclose(self) -> None:
        await self.inner.aclose()


# -- small helpers -------------------------------------------------------------------------


def _is_corrupt(error: BaseException) -> bool:
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in (11, 26):  # SQLITE_CORRUPT, SQLITE_NOTADB
        return True
    text = str(error).lower()
    return "malformed" in text or "not a database" in text


def _is_busy(error: BaseException) -> bool:
    text = str(error).lower()
    return "locked" in text or "busy" in text


def _warn(message: str) -> None:
    logger.warning(message)
    warnings.warn(message, HistoryWarning, stacklevel=3)


def _title(prompt: str) -> str:
    line = prompt.strip().splitlines()[0] if prompt.strip() else ""
    return line if len(line) <= 80 else line[:79] + "…"


def _index_of(messages: list[Message], message: Message) -> int:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index] is message:
            return index
    raise ValueError("message is not part of the conversation")
