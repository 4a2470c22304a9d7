"""Stored history as users take it away: JSON or Markdown files, a pandas DataFrame."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._internal.redaction import scrub_known
from ..messages import Conversation

if TYPE_CHECKING:
    import pandas

COLUMNS = [
    "id", "title", "model", "turns", "rounds", "tool_calls",
    "input_tokens", "output_tokens", "stop_reason", "created", "updated",
]  # fmt: skip
"""The columns of the conversation listing (:meth:`Store.conversations`, ``history()``)."""


def export_conversation(conversation: Conversation, path: str | os.PathLike[str]) -> Path:
    """Write ``conversation`` to ``path``: Markdown if it ends in ``.md``, JSON otherwise.

    Every secret the process knows is redacted from either (the JSON keeps provider
    data intact otherwise: key-shape patterns could match inside an opaque blob).
    """
    target = Path(path).expanduser()
    is_markdown = target.suffix.lower() in (".md", ".markdown")
    text = (
        conversation.to_markdown() if is_markdown else scrub_known(conversation.to_json(indent=2))
    )
    target.write_text(text + ("" if text.endswith("\n") else "\n"), encoding="utf-8")
    return target


def conversations_frame(rows: Sequence[Mapping[str, Any]]) -> pandas.DataFrame:
    """The conversation listing as a DataFrame, with ``created``/``updated`` as UTC datetimes."""
    import pandas as pd

    frame = pd.DataFrame(list(rows), columns=COLUMNS)
    for column in ("created", "updated"):
        frame[column] = pd.to_datetime(frame[column], unit="s", utc=True)
    return frame


def last_model(conversation: Conversation) -> str | None:
    """The model label the conversation's latest answer came from (for resuming it)."""
    return next((m.model for m in reversed(conversation.messages) if m.model), None)


def conversation_rounds(conversation: Conversation) -> pandas.DataFrame:
    """The tool calls of ``conversation`` as a DataFrame, one row per call (``%agent history``)."""
    import pandas as pd

    rows = []
    number = 0
    turn = 0
    for message in conversation.messages:
        if message.role == "user":
            turn += 1
            continue
        for tool_round in message.rounds or []:
            number += 1
            by_id = {r.call_id: r for r in tool_round.results}
            for call in tool_round.calls:
                result = by_id.get(call.id)
                rows.append(
                    {
                        "turn": turn,
                        "round": number,
                        "tool": call.name,
                        "arguments": json.dumps(call.arguments, ensure_ascii=False, default=str),
                        "ok": bool(result and result.ok),
                        "duration": result.duration_s if result else None,
                        "tokens": tool_round.usage.total_tokens,
                    }
                )
    columns = ["turn", "round", "tool", "arguments", "ok", "duration", "tokens"]
    return pd.DataFrame(rows, columns=columns)
