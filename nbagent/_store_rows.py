"""Rows of the history database: writing messages and rounds, reading a conversation back."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from .redaction import Scrubber, scrub_optional
from .values import preview_value
from .messages import Conversation, Message, ToolCall, ToolResult, ToolRound, Usage

INTERRUPTED_NOTE = "[run interrupted: the kernel stopped before it finished]"


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
    usage = message.usage
    cursor = db.execute(
        """
        INSERT INTO messages (conversation_id, position, role, content, model, stop_reason,
          input_tokens, output_tokens, provider_data, created_at, finished_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """,
        (
            conversation_id,
            position,
            message.role,
            scrub.text(message.content) if finished else "",
            message.model,
            message.stop_reason if finished else None,
            usage.input_tokens if usage and finished else None,
            usage.output_tokens if usage and finished else None,
            scrub.json(message.provider_data) if finished else None,
            now,
            now if finished else None,
        ),
    )
    row = cursor.lastrowid
    assert row is not None
    if finished:
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
    cursor = db.execute(
        """
        INSERT INTO rounds (message_id, position, assistant_text, input_tokens, output_tokens,
          duration_s, provider_data, created_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
        """,
        (
            message_row,
            position,
            scrub_optional(scrub.text, tool_round.assistant_text),
            tool_round.usage.input_tokens,
            tool_round.usage.output_tokens,
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
                call.name,
                scrub.json(call.arguments) or "{}",
                scrub_optional(scrub.text, call.raw_arguments),
                scrub.json(call.provider_data),
            ),
        )
        result = by_id.get(call.id)
        if result is None and index < len(tool_round.results):
            result = tool_round.results[index]
        if result is None:
            continue  # cannot happen for a finished round (history invariant)
        value_type, preview = preview_value(result.value) if result.ok else (None, None)
        db.execute(
            """
            INSERT INTO tool_results (tool_call_id, ok, content, error, traceback, approval,
              duration_s, truncated, value_type, preview)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            (
                cursor.lastrowid,
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


def load_conversation(db: sqlite3.Connection, conversation_id: str) -> Conversation:
    """Rebuild one stored conversation (run inside a read transaction)."""
    system = db.execute(
        "SELECT system FROM conversations WHERE id = ?", (conversation_id,)
    ).fetchone()[0]
    messages: dict[int, Message] = {}
    for row in db.execute(
        """
        SELECT id, role, content, model, stop_reason, input_tokens, output_tokens,
          provider_data, finished_at
        FROM messages WHERE conversation_id = ? ORDER BY position
        """,
        (conversation_id,),
    ):
        row_id, role, content, model, stop_reason, tokens_in, tokens_out, data, done = row
        message = Message(role=role, content=content, model=model, stop_reason=stop_reason)
        if tokens_in is not None:
            message.usage = Usage(tokens_in, tokens_out or 0)
        message.provider_data = _json_or_none(data)
        if role == "assistant":
            message.rounds = []
            if done is None:
                message.content = content or INTERRUPTED_NOTE
                message.stop_reason = "interrupted"
        messages[row_id] = message
    rounds: dict[int, ToolRound] = {}
    for row in db.execute(
        """
        SELECT r.id, r.message_id, r.assistant_text, r.input_tokens, r.output_tokens,
          r.duration_s, r.provider_data
        FROM rounds r JOIN messages m ON r.message_id = m.id
        WHERE m.conversation_id = ? ORDER BY m.position, r.position
        """,
        (conversation_id,),
    ):
        row_id, message_row, text, tokens_in, tokens_out, duration, data = row
        tool_round = ToolRound(
            text, [], [], Usage(tokens_in, tokens_out), duration, _json_or_none(data)
        )
        rounds[row_id] = tool_round
        owner = messages[message_row]
        owner.rounds = (owner.rounds or []) + [tool_round]
    for row in db.execute(
        """
        SELECT t.round_id, t.call_id, t.name, t.arguments, t.raw_arguments, t.provider_data,
          s.ok, s.content, s.error, s.traceback, s.approval, s.duration_s, s.truncated
        FROM tool_calls t JOIN rounds r ON t.round_id = r.id
          JOIN messages m ON r.message_id = m.id
          LEFT JOIN tool_results s ON s.tool_call_id = t.id
        WHERE m.conversation_id = ? ORDER BY m.position, r.position, t.position
        """,
        (conversation_id,),
    ):
        round_row, call_id, name, arguments, raw, data = row[:6]
        ok, content, error, traceback, approval, duration, truncated = row[6:]
        tool_round = rounds[round_row]
        tool_round.calls.append(
            ToolCall(call_id, name, json.loads(arguments), raw, _json_or_none(data))
        )
        if ok is None:  # no result row: keep the history invariant all the same
            error = "not run: the result was not saved"
            ok, content, duration, truncated = 0, f"Error: {error}", 0.0, 0
        tool_round.results.append(
            ToolResult(
                call_id,
                name,
                bool(ok),
                content,
                error,
                duration,
                bool(truncated),
                traceback,
                approval,
            )  # fmt: skip
        )
    for message in messages.values():
        if message.role == "assistant" and message.usage is None and message.rounds:
            total = Usage()
            for tool_round in message.rounds:
                total = total + tool_round.usage
            message.usage = total
    return Conversation(id=conversation_id, system=system, messages=list(messages.values()))


def _json_or_none(text: str | None) -> Any:
    return None if text is None else json.loads(text)
