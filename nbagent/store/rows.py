"""Rows of the history database: a run's start, rounds and answer written, a conversation read back.

Every text written goes through the run's :class:`~nbagent._internal.redaction.Scrubber`, so
secrets never reach the file. These functions run inside a transaction the caller
opened (see :class:`~nbagent.store.database.Database`); they only speak SQL.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._internal.redaction import Scrubber, scrub_optional
from .._internal.values import preview_value
from ..messages import Conversation, Message, ToolCall, ToolResult, ToolRound, Usage
from .image_rows import insert_images, load_images

if TYPE_CHECKING:
    from ..results import RunResult

INTERRUPTED_NOTE = "[run interrupted: the kernel stopped before it finished]"
"""The content a stored answer comes back with when its run never finished."""

TITLE_CHARS = 80
"""A conversation's title is the first line of its first prompt, cut to this length."""

_USAGE_FIELDS = (
    "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
    "reasoning_tokens", "cost", "usage_estimated",
)  # fmt: skip
USAGE_COLUMNS = ", ".join(_USAGE_FIELDS)
"""A message's or a round's usage, as :func:`usage_row` writes and :func:`usage_of` reads it."""
_ROUND_USAGE = ", ".join(f"r.{column}" for column in _USAGE_FIELDS)
_SET_USAGE = ", ".join(f"{column} = ?" for column in _USAGE_FIELDS)


def usage_row(usage: Usage | None) -> tuple[Any, ...]:
    """``usage`` as the values of :data:`USAGE_COLUMNS` (NULL tokens: no usage yet)."""
    if usage is None:
        return None, None, 0, 0, 0, None, 0
    return (
        usage.input_tokens, usage.output_tokens, usage.cache_read_tokens,
        usage.cache_write_tokens, usage.reasoning_tokens, usage.cost, int(usage.estimated),
    )  # fmt: skip


def usage_of(values: Sequence[Any]) -> Usage | None:
    """The usage stored in :data:`USAGE_COLUMNS` (None when its tokens are NULL)."""
    tokens_in, tokens_out, cache_read, cache_write, reasoning, cost, estimated = values
    if tokens_in is None:
        return None
    return Usage(
        input_tokens=tokens_in, output_tokens=tokens_out or 0,
        cache_read_tokens=cache_read or 0, cache_write_tokens=cache_write or 0,
        reasoning_tokens=reasoning or 0, cost=cost, estimated=bool(estimated),
    )  # fmt: skip


# -- writing -------------------------------------------------------------------------


def insert_run_start(
    db: sqlite3.Connection,
    scrub: Scrubber,
    conversation: Conversation,
    position: int,
    now: float,
    *,
    fork_of: str | None = None,
) -> int:
    """Save the start of the run whose answer is ``conversation.messages[position]``.

    Upserts the conversation, writes the earlier messages the file lacks (or holds
    only unfinished), then the run's answer as an unfinished row, whose id it returns.
    ``fork_of``: the conversation this one was forked from (its title says so).
    """
    message = conversation.messages[position]
    first_user = next((m.content for m in conversation.messages if m.role == "user"), "")
    title = title_of(scrub.text(first_user))
    if fork_of is not None:
        title = f"[fork of {fork_of}] {title or ''}".rstrip()
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
            title,
            scrub_optional(scrub.text, conversation.system),
            message.model,
            now,
            now,
        ),
    )
    trusted = _trusted(db, conversation.id, position)
    db.execute(
        "DELETE FROM messages WHERE conversation_id = ? AND position >= ?",
        (conversation.id, trusted),
    )
    for index in range(trusted, position):
        insert_message(db, scrub, conversation.id, index, conversation.messages[index], now)
    return insert_message(db, scrub, conversation.id, position, message, now, finished=False)


def _trusted(db: sqlite3.Connection, conversation_id: str, position: int) -> int:
    """How many messages before ``position`` the file holds complete, with no gap.

    Those are trusted; anything from the first gap (or unfinished one) onwards is
    replaced from memory when a run starts.
    """
    return int(
        db.execute(
            """
            SELECT count(*) FROM messages
            WHERE conversation_id = ? AND position < ? AND finished_at IS NOT NULL
              AND position < coalesce((SELECT min(position) FROM messages
                                       WHERE conversation_id = ? AND finished_at IS NULL), ?)
            """,
            (conversation_id, position, conversation_id, position),
        ).fetchone()[0]
    )


def foreign_rows(
    db: sqlite3.Connection, conversation_id: str, position: int, known: set[int]
) -> bool:
    """Whether starting a run at ``position`` would replace rows this writer does not know.

    ``known``: the message rows the conversation object was loaded from or wrote.
    Another process (or another Agent) that continued the same conversation wrote
    the others: they must never be overwritten.
    """
    rows = db.execute(
        "SELECT id FROM messages WHERE conversation_id = ? AND position >= ?",
        (conversation_id, _trusted(db, conversation_id, position)),
    )
    return any(row[0] not in known for row in rows)


def message_rows(db: sqlite3.Connection, conversation_id: str) -> set[int]:
    """The ids of every message row of a conversation."""
    rows = db.execute("SELECT id FROM messages WHERE conversation_id = ?", (conversation_id,))
    return {row[0] for row in rows}


def row_exists(db: sqlite3.Connection, message_row: int, conversation_id: str) -> bool:
    """Whether the run's answer row is still there (another writer may have replaced it)."""
    found = db.execute(
        "SELECT 1 FROM messages WHERE id = ? AND conversation_id = ?",
        (message_row, conversation_id),
    ).fetchone()
    return found is not None


def update_answer(
    db: sqlite3.Connection,
    scrub: Scrubber,
    conversation_id: str,
    message_row: int,
    message: Message,
    result: RunResult,
    now: float,
) -> None:
    """Mark the run's answer row finished: its text, stop reason, model, usage and duration."""
    db.execute(
        f"""
        UPDATE messages SET content = ?, stop_reason = ?, model = ?, {_SET_USAGE},
          provider_data = ?, duration_s = ?, finished_at = ?
        WHERE id = ?
        """,
        (
            scrub.text(message.content),
            result.stop_reason,
            result.model,
            *usage_row(result.usage),
            scrub.json(message.provider_data),
            result.elapsed_s,
            now,
            message_row,
        ),
    )
    db.execute(
        "UPDATE conversations SET updated_at = ?, model = ? WHERE id = ?",
        (now, result.model, conversation_id),
    )


def insert_message(
    db: sqlite3.Connection,
    scrub: Scrubber,
    conversation_id: str,
    position: int,
    message: Message,
    now: float,
    *,
    finished: bool = True,
) -> int:
    """Write one message (with its rounds when ``finished``); returns its row id.

    An unfinished message (a run in progress) is written empty: its rounds and its
    answer follow as the run goes.
    """
    cursor = db.execute(
        f"""
        INSERT INTO messages (conversation_id, position, role, content, model, stop_reason,
          {USAGE_COLUMNS}, provider_data, created_at, finished_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """,
        (
            conversation_id,
            position,
            message.role,
            scrub.text(message.content) if finished else "",
            message.model,
            message.stop_reason if finished else None,
            *usage_row(message.usage if finished else None),
            scrub.json(message.provider_data) if finished else None,
            now,
            now if finished else None,
        ),
    )
    row = cursor.lastrowid
    assert row is not None
    if finished:
        insert_images(db, conversation_id, message.images, message_row=row)
        for index, tool_round in enumerate(message.rounds or []):
            insert_round(db, scrub, row, index, tool_round, now)
    return row


def insert_round(
    db: sqlite3.Connection,
    scrub: Scrubber,
    message_row: int,
    position: int,
    tool_round: ToolRound,
    now: float,
) -> None:
    """Write one finished round: its text, usage, calls and their results."""
    cursor = db.execute(
        f"""
        INSERT INTO rounds (message_id, position, assistant_text, {USAGE_COLUMNS},
          duration_s, provider_data, created_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """,
        (
            message_row,
            position,
            scrub_optional(scrub.text, tool_round.assistant_text),
            *usage_row(tool_round.usage),
            tool_round.duration_s,
            scrub.json(tool_round.provider_data),
            now,
        ),
    )
    round_row = cursor.lastrowid
    by_id = {r.call_id: r for r in tool_round.results}
    for index, call in enumerate(tool_round.calls):
        cursor = db.execute(
            """
            INSERT INTO tool_calls (round_id, position, call_id, name, arguments, raw_arguments,
              provider_data)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """,
            (
                round_row,
                index,
                call.id,
                scrub.text(call.name),
                scrub.json_text(call.arguments) or "{}",
                scrub_optional(scrub.text, call.raw_arguments),
                scrub.json(call.provider_data),
            ),
        )
        call_row = cursor.lastrowid
        result = by_id.get(call.id)
        if result is None and index < len(tool_round.results):
            result = tool_round.results[index]
        if result is None:
            continue  # cannot happen for a finished round (history invariant)
        value_type, preview = (
            (result.preview or preview_value(result.value)) if result.ok else (None, None)
        )  # result.preview: computed off the event loop (nbagent/tools/execution.py)
        db.execute(
            """
            INSERT INTO tool_results (tool_call_id, ok, content, error, traceback, approval,
              duration_s, truncated, value_type, preview)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            (
                call_row,
                int(result.ok),
                scrub.text(result.content),
                scrub_optional(scrub.text, result.error),
                scrub_optional(scrub.text, result.traceback),
                result.approval,
                result.duration_s,
                int(result.truncated),
                value_type,
                scrub_optional(scrub.text, preview),
            ),
        )
        if result.images:
            conversation_id = db.execute(
                "SELECT conversation_id FROM messages WHERE id = ?", (message_row,)
            ).fetchone()[0]
            insert_images(db, conversation_id, result.images, tool_call_row=call_row)


# -- reading -------------------------------------------------------------------------


def load_conversation(db: sqlite3.Connection, conversation_id: str) -> Conversation:
    """Rebuild one stored conversation (run inside a read transaction)."""
    system = db.execute(
        "SELECT system FROM conversations WHERE id = ?", (conversation_id,)
    ).fetchone()[0]
    messages: dict[int, Message] = {}
    images = load_images(db, conversation_id)
    for row in db.execute(
        f"""
        SELECT id, role, content, model, stop_reason, provider_data, finished_at,
          {USAGE_COLUMNS}
        FROM messages WHERE conversation_id = ? ORDER BY position
        """,
        (conversation_id,),
    ):
        row_id, role, content, model, stop_reason, data, done = row[:7]
        message = Message(role=role, content=content, model=model, stop_reason=stop_reason)
        message.images, notes = images.of_message(row_id)
        if notes:
            message.content = "\n".join([message.content, *notes])
        message.usage = usage_of(row[7:])
        message.provider_data = _json_or_none(data)
        if role == "assistant":
            message.rounds = []
            if done is None:
                message.content = content or INTERRUPTED_NOTE
                message.stop_reason = "interrupted"
        messages[row_id] = message
    rounds: dict[int, ToolRound] = {}
    for row in db.execute(
        f"""
        SELECT r.id, r.message_id, r.assistant_text, r.duration_s, r.provider_data,
          {_ROUND_USAGE}
        FROM rounds r JOIN messages m ON r.message_id = m.id
        WHERE m.conversation_id = ? ORDER BY m.position, r.position
        """,
        (conversation_id,),
    ):
        row_id, message_row, text, duration, data = row[:5]
        usage = usage_of(row[5:]) or Usage()
        tool_round = ToolRound(text, [], [], usage, duration, _json_or_none(data))
        rounds[row_id] = tool_round
        owner = messages[message_row]
        owner.rounds = (owner.rounds or []) + [tool_round]
    for row in db.execute(
        """
        SELECT t.id, t.round_id, t.call_id, t.name, t.arguments, t.raw_arguments, t.provider_data,
          s.ok, s.content, s.error, s.traceback, s.approval, s.duration_s, s.truncated
        FROM tool_calls t JOIN rounds r ON t.round_id = r.id
          JOIN messages m ON r.message_id = m.id
          LEFT JOIN tool_results s ON s.tool_call_id = t.id
        WHERE m.conversation_id = ? ORDER BY m.position, r.position, t.position
        """,
        (conversation_id,),
    ):
        call_row, round_row, call_id, name, arguments, raw, data = row[:7]
        ok, content, error, traceback, approval, duration, truncated = row[7:]
        tool_round = rounds[round_row]
        tool_round.calls.append(
            ToolCall(call_id, name, json.loads(arguments), raw, _json_or_none(data))
        )
        if ok is None:  # no result row: keep the history invariant all the same
            error = "not run: the result was not saved"
            ok, content, duration, truncated = 0, f"Error: {error}", 0.0, 0
        result = ToolResult(
            call_id, name, bool(ok), content, error, duration, bool(truncated), traceback, approval
        )
        result.images, notes = images.of_tool_call(call_row)
        if notes:
            result.content = "\n".join([result.content, *notes])
        tool_round.results.append(result)
    for message in messages.values():
        if message.role == "assistant" and message.usage is None and message.rounds:
            total = Usage()
            for tool_round in message.rounds:
                total = total + tool_round.usage
            message.usage = total
    return Conversation(id=conversation_id, system=system, messages=list(messages.values()))


def title_of(prompt: str) -> str:
    """The first line of ``prompt``, cut to :data:`TITLE_CHARS`."""
    line = prompt.strip().splitlines()[0] if prompt.strip() else ""
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"


def _json_or_none(text: str | None) -> Any:
    return None if text is None else json.loads(text)
