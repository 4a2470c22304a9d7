"""Edit and regenerate as branches: what the chat needs from the history's tree.

Editing turn *n* starts a new conversation holding a copy of the turns before it
(:func:`branch_from`); the run of the edited message continues that copy (the
``conversation=`` run option), and :mod:`nbagent.store.tree` records where it left
the original. The turns the page draws carry their "2/3" label (:func:`with_branches`).
"""

from __future__ import annotations

import copy
from typing import Any

from ..messages import Conversation, new_id
from ..store import Store
from ..store.tree import BranchPoint, branch_points


def user_positions(conversation: Conversation) -> list[int]:
    """The position of each turn's user message: turn *n* starts at ``[n]``."""
    return [i for i, m in enumerate(conversation.messages) if m.role == "user"]


def position_of_turn(conversation: Conversation, turn: int) -> int:
    """The position of turn ``turn``'s user message.

    Raises:
        IndexError: there is no such turn (with the number of turns).
    """
    positions = user_positions(conversation)
    if not 0 <= turn < len(positions):
        raise IndexError(f"no turn {turn}: the chat has {len(positions)} turns")
    return positions[turn]


def branch_from(conversation: Conversation, position: int) -> Conversation:
    """A new conversation holding a copy of ``conversation``'s messages before ``position``."""
    return Conversation(
        id=new_id("c_"),
        system=conversation.system,
        messages=copy.deepcopy(conversation.messages[:position]),
    )


def points_of(store: Store | None, conversation: Conversation) -> dict[int, BranchPoint]:
    """The branch points of ``conversation`` by position (none without history)."""
    if store is None or not conversation.messages:
        return {}
    try:
        return {p.position: p for p in branch_points(store, conversation.id)}
    except Exception:  # history unavailable: the chat works, without arrows
        return {}


def with_branches(
    turns: list[dict[str, Any]], conversation: Conversation, points: dict[int, BranchPoint]
) -> list[dict[str, Any]]:
    """``turns`` with ``"branch": {"label", "index", "count"}`` where a turn has siblings."""
    positions = user_positions(conversation)
    decorated = []
    for index, turn in enumerate(turns):
        point = points.get(positions[index]) if index < len(positions) else None
        if point is None:
            decorated.append(turn)
        else:
            branch = {"label": point.label, "index": point.index, "count": len(point.targets)}
            decorated.append({**turn, "branch": branch})
    return decorated
