"""What a chat redraws that a stored message does not carry: user views and run durations.

A message sent from the ChatWidget can read differently from what the model got:
``@sales`` went as the variable's description. The chat keeps the text as typed,
and the notes it showed under it, beside the message (:func:`keep_user_view`); it
reads them back, with the duration the run writer saved for each answer, when it
draws a stored conversation again (:func:`chat_rows`). Rows a branch copied from
the conversation it left are read as that conversation's, as :mod:`.tree` reads them.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field

from .._internal.redaction import process_scrubber
from .database import Database
from .tree import written_spans


@dataclass(frozen=True)
class UserView:
    """A user message as the chat showed it."""

    text: str
    """The message as typed, its ``@mentions`` and ``{fields}`` unexpanded."""
    notes: tuple[str, ...] = ()
    """The lines shown under it (what was sent in place of a field, images attached)."""


@dataclass
class ChatRows:
    """What :func:`chat_rows` reads for one conversation, by message position."""

    views: dict[int, UserView] = field(default_factory=dict)
    """User messages the chat showed differently from the text sent."""
    durations: dict[int, float] = field(default_factory=dict)
    """Seconds each finished answer's run took (``RunResult.elapsed_s``)."""


def keep_user_view(store: Database, conversation_id: str, position: int, view: UserView) -> bool:
    """Keep ``view`` beside user message ``position`` (False: not saved, e.g. no such row).

    The text and notes are redacted as everything in the history is.
    """
    scrub = process_scrubber()
    data = json.dumps(
        {"text": scrub.text(view.text), "notes": [scrub.text(n) for n in view.notes]},
        ensure_ascii=False,
    )
    written: list[int] = []

    def work(db: sqlite3.Connection) -> None:
        cursor = db.execute(
            "UPDATE messages SET user_view = ? "
            "WHERE conversation_id = ? AND position = ? AND role = 'user'",
            (data, conversation_id, position),
        )
        written.append(cursor.rowcount)

    return store.write(work) and written == [1]


def chat_rows(store: Database, conversation_id: str) -> ChatRows:
    """The user views and answer durations of ``conversation_id`` (empty when unknown)."""
    return store.read(lambda db: _chat_rows(db, conversation_id))


def _chat_rows(db: sqlite3.Connection, conversation_id: str) -> ChatRows:
    found = ChatRows()
    for owner, start, end in written_spans(db, conversation_id):
        for position, role, view, duration in db.execute(
            "SELECT position, role, user_view, duration_s FROM messages "
            "WHERE conversation_id = ? AND position >= ? AND position < ?",
            (owner, start, end),
        ):
            shown = _view(view) if role == "user" and view else None
            if shown is not None:
                found.views[position] = shown
            elif role == "assistant" and duration is not None:
                found.durations[position] = float(duration)
    return found


def _view(text: str) -> UserView | None:
    """The stored view, or None when it is not one (the sent text is shown instead)."""
    try:
        data = json.loads(text)
        return UserView(str(data["text"]), tuple(str(n) for n in data.get("notes") or ()))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
