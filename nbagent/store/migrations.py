"""Schema of the history database, as an ordered list of migration functions.

``PRAGMA user_version`` holds how many migrations a file has had. Opening a
file runs the missing ones, in order, each in the same write transaction that
re-reads the version (so two kernels opening an old file at once migrate it
once). Never edit a published migration: append a new one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable


def _m001_initial(db: sqlite3.Connection) -> None:
    """Conversations, messages, rounds, tool calls and their results."""
    _execute_script(
        db,
        """
        CREATE TABLE conversations (
            id          TEXT PRIMARY KEY,
            title       TEXT,
            system      TEXT,
            model       TEXT,
            created_at  REAL NOT NULL,
            updated_at  REAL NOT NULL
        );
        CREATE TABLE messages (
            id              INTEGER PRIMARY KEY,
            conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            position        INTEGER NOT NULL,
            role            TEXT NOT NULL,
            content         TEXT NOT NULL,
            model           TEXT,
            stop_reason     TEXT,
            input_tokens    INTEGER,
            output_tokens   INTEGER,
            provider_data   TEXT,
            duration_s      REAL,
            created_at      REAL NOT NULL,
            finished_at     REAL,
            UNIQUE (conversation_id, position)
        );
        CREATE TABLE rounds (
            id              INTEGER PRIMARY KEY,
            message_id      INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            position        INTEGER NOT NULL,
            assistant_text  TEXT,
            input_tokens    INTEGER NOT NULL DEFAULT 0,
            output_tokens   INTEGER NOT NULL DEFAULT 0,
            duration_s      REAL NOT NULL DEFAULT 0,
            provider_data   TEXT,
            created_at      REAL NOT NULL,
            UNIQUE (message_id, position)
        );
        CREATE TABLE tool_calls (
            id              INTEGER PRIMARY KEY,
            round_id        INTEGER NOT NULL REFERENCES rounds(id) ON DELETE CASCADE,
            position        INTEGER NOT NULL,
            call_id         TEXT NOT NULL,
            name            TEXT NOT NULL,
            arguments       TEXT NOT NULL,
            raw_arguments   TEXT,
            provider_data   TEXT,
            UNIQUE (round_id, position)
        );
        CREATE TABLE tool_results (
            tool_call_id    INTEGER PRIMARY KEY REFERENCES tool_calls(id) ON DELETE CASCADE,
            ok              INTEGER NOT NULL,
            content         TEXT NOT NULL,
            error           TEXT,
            traceback       TEXT,
            approval        TEXT,
            duration_s      REAL NOT NULL DEFAULT 0,
            truncated       INTEGER NOT NULL DEFAULT 0
        );
        """,
    )


def _m002_previews(db: sqlite3.Connection) -> None:
    """Bounded previews of returned values, and an index for listing recent conversations."""
    _execute_script(
        db,
        """
        ALTER TABLE tool_results ADD COLUMN value_type TEXT;
        ALTER TABLE tool_results ADD COLUMN preview TEXT;
        CREATE INDEX conversations_by_update ON conversations(updated_at);
        """,
    )


def _m003_images(db: sqlite3.Connection) -> None:
    """Images shown to the model: a prompt's attachments and a tool result's figures.

    Each row belongs to one message (``message_id``) or one tool call's result
    (``tool_call_id``); ``data`` is NULL when the image was over the size limit
    when saved (it then loads back as its text line only).
    """
    _execute_script(
        db,
        """
        CREATE TABLE images (
            id              INTEGER PRIMARY KEY,
            message_id      INTEGER REFERENCES messages(id) ON DELETE CASCADE,
            tool_call_id    INTEGER REFERENCES tool_calls(id) ON DELETE CASCADE,
            position        INTEGER NOT NULL,
            media_type      TEXT NOT NULL,
            width           INTEGER NOT NULL,
            height          INTEGER NOT NULL,
            data            BLOB,
            CHECK ((message_id IS NULL) <> (tool_call_id IS NULL))
        );
        CREATE INDEX images_by_message ON images(message_id) WHERE message_id IS NOT NULL;
        CREATE INDEX images_by_tool_call ON images(tool_call_id) WHERE tool_call_id IS NOT NULL;
        """,
    )


def _m004_batch_journal(db: sqlite3.Connection) -> None:
    """The batch journal: one row per finished ``Agent.map`` row, keyed by what decides it.

    ``key`` hashes the row's prompt with the batch's identity (model, system prompt,
    tool schemas, output schema); ``batch`` is that identity alone, so a resume reads
    its batch's rows with one indexed query. ``output`` is JSON.
    """
    _execute_script(
        db,
        """
        CREATE TABLE batch_rows (
            key             TEXT PRIMARY KEY,
            batch           TEXT NOT NULL,
            ok              INTEGER NOT NULL,
            output          TEXT,
            error           TEXT,
            cost            REAL,
            tokens          INTEGER NOT NULL DEFAULT 0,
            rounds          INTEGER NOT NULL DEFAULT 0,
            seconds         REAL NOT NULL DEFAULT 0,
            conversation_id TEXT,
            finished_at     REAL NOT NULL
        );
        CREATE INDEX batch_rows_by_batch ON batch_rows(batch, ok);
        """,
    )


def _m005_batch_jobs(db: sqlite3.Connection) -> None:
    """Provider batch jobs (``Agent.map(..., mode="batch")``) and the requests in each.

    ``batch_jobs`` has one row per job a provider's batch API accepted (its id, state,
    the call's request round, created/ended); ``batch_job_requests`` maps each request
    of a job (its ``custom_id``) to the ``Agent.map`` row (``row_key``, as in
    ``batch_rows``) and that row's request number, with a hash of the body sent, so a
    call after a kernel restart collects the job instead of sending the request again.
    ``outcome`` is the request's result once collected (errored and expired ones are
    sent again); ``cost`` its price at the batch rate.
    """
    _execute_script(
        db,
        """
        CREATE TABLE batch_jobs (
            job_id      TEXT PRIMARY KEY,
            provider    TEXT NOT NULL,
            model       TEXT NOT NULL,
            state       TEXT NOT NULL,
            round       INTEGER NOT NULL,
            requests    INTEGER NOT NULL,
            price_basis TEXT,
            created_at  REAL NOT NULL,
            ended_at    REAL
        );
        CREATE TABLE batch_job_requests (
            job_id      TEXT NOT NULL REFERENCES batch_jobs(job_id) ON DELETE CASCADE,
            custom_id   TEXT NOT NULL,
            row_key     TEXT NOT NULL,
            request     INTEGER NOT NULL,
            body_hash   TEXT NOT NULL,
            outcome     TEXT,
            cost        REAL,
            PRIMARY KEY (job_id, custom_id)
        );
        CREATE INDEX batch_job_requests_by_row ON batch_job_requests(row_key, request);
        """,
    )


def _m006_message_parents(db: sqlite3.Connection) -> None:
    """Branches: each message has a parent, so a conversation's edits form a tree.

    A branch (an edited message, a regenerated answer) is saved as a conversation
    of its own, whole, whose ``branch_of`` names the conversation that wrote the
    message it replaces and ``branch_at`` that message's position; its first new
    message gets the replaced message's parent, so the two are siblings.
    ``root_id`` names the first conversation of the tree and ``shown_at`` when a
    chat last showed this branch. A trigger fills ``parent_id`` as rows are
    written, so writers need not know about branches; older files get their chats
    as straight lines. Depends on no other migration but the first.
    """
    _execute_script(
        db,
        """
        ALTER TABLE messages ADD COLUMN parent_id INTEGER
            REFERENCES messages(id) ON DELETE SET NULL;
        ALTER TABLE conversations ADD COLUMN branch_of TEXT;
        ALTER TABLE conversations ADD COLUMN branch_at INTEGER;
        ALTER TABLE conversations ADD COLUMN root_id TEXT;
        ALTER TABLE conversations ADD COLUMN shown_at REAL;
        UPDATE messages SET parent_id = (
            SELECT p.id FROM messages p
            WHERE p.conversation_id = messages.conversation_id
              AND p.position = messages.position - 1
        );
        CREATE INDEX messages_by_parent ON messages(parent_id);
        CREATE INDEX conversations_by_root ON conversations(root_id) WHERE root_id IS NOT NULL;
        CREATE TRIGGER messages_parent AFTER INSERT ON messages
        WHEN NEW.parent_id IS NULL AND NEW.position > 0
        BEGIN
            UPDATE messages SET parent_id = coalesce(
                (SELECT p.parent_id FROM conversations c JOIN messages p
                   ON p.conversation_id = c.branch_of AND p.position = NEW.position
                 WHERE c.id = NEW.conversation_id AND c.branch_at = NEW.position),
                (SELECT p.id FROM messages p
                 WHERE p.conversation_id = NEW.conversation_id
                   AND p.position = NEW.position - 1)
            ) WHERE id = NEW.id;
        END;
        """,
    )


def _m007_usage_estimated(db: sqlite3.Connection) -> None:
    """Whether token counts were estimated by nbagent (1) or reported (0), per message and round.

    A server that reports no usage, or a run stopped mid-stream before the report
    came, leaves counts that nbagent estimated; reopened history says so.
    """
    db.execute("ALTER TABLE messages ADD COLUMN usage_estimated INTEGER NOT NULL DEFAULT 0")
    db.execute("ALTER TABLE rounds ADD COLUMN usage_estimated INTEGER NOT NULL DEFAULT 0")


def _m008_user_views(db: sqlite3.Connection) -> None:
    """How a chat showed a user message, when that differs from the text sent to the model.

    JSON ``{"text": ..., "notes": [...]}``: the text as typed (``@sales``, ``{df}``) and
    the lines shown under it, so a chat reopened after a restart draws the message as
    it was typed. NULL (older files, other surfaces): the sent text is shown.
    """
    db.execute("ALTER TABLE messages ADD COLUMN user_view TEXT")


def _m009_usage_whole(db: sqlite3.Connection) -> None:
    """The rest of each message's and round's usage: cache and reasoning tokens, and the price.

    Before, a reopened conversation had input and output tokens only, so a chat redrawn
    after a restart showed no price and totals left out cached tokens. NULL cost: unknown
    (older rows, or a model genai-prices does not know).
    """
    for table in ("messages", "rounds"):
        for column in ("cache_read_tokens", "cache_write_tokens", "reasoning_tokens"):
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} INTEGER NOT NULL DEFAULT 0")
        db.execute(f"ALTER TABLE {table} ADD COLUMN cost REAL")


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    _m001_initial,
    _m002_previews,
    _m003_images,
    _m004_batch_journal,
    _m005_batch_jobs,
    _m006_message_parents,
    _m007_usage_estimated,
    _m008_user_views,
    _m009_usage_whole,
]
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(db: sqlite3.Connection) -> int:
    """Bring ``db`` (autocommit mode) to the latest schema; returns the version found before.

    Raises:
        NewerSchemaError: the file was written by a newer nbagent.
    """
    found = int(db.execute("PRAGMA user_version").fetchone()[0])
    if found == SCHEMA_VERSION:
        return found
    db.execute("BEGIN IMMEDIATE")
    try:
        # Re-read under the write lock: another process may have migrated meanwhile.
        found = int(db.execute("PRAGMA user_version").fetchone()[0])
        if found > SCHEMA_VERSION:
            raise NewerSchemaError(found)
        for number in range(found, SCHEMA_VERSION):
            MIGRATIONS[number](db)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return found


class NewerSchemaError(Exception):
    """The history file has a schema version this nbagent does not know."""

    def __init__(self, version: int) -> None:
        self.version = version
        super().__init__(
            f"history database schema version {version} is newer than this nbagent's "
            f"({SCHEMA_VERSION}); upgrade nbagent to use it"
        )


def _execute_script(db: sqlite3.Connection, script: str) -> None:
    """Run a script statement by statement: ``executescript`` would COMMIT our transaction."""
    for statement in _split_statements(script):
        db.execute(statement)


def _split_statements(script: str) -> list[str]:
    """Split a script into complete statements (sqlite3.complete_statement knows about quotes)."""
    statements: list[str] = []
    current = ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            if current.strip():
                statements.append(current.strip())
            current = ""
    if current.strip():
        statements.append(current.strip())
    return statements
