"""Branches of a conversation: edited messages and regenerated answers, as a tree.

A branch is saved as a conversation of its own (the run writer saves it whole, as it
saves any run), created here first with ``branch_of`` (the conversation it left),
``branch_at`` (the position of its first new message) and ``root_id`` (the tree's
first conversation). The history's ``messages_parent`` trigger then gives its first
new message the parent of the message it replaces, so every message has a parent
and messages with the same parent are siblings: the "2/3" of a chat.

Rows of a branch before ``branch_at`` are its copy of the shared start; they are
read as the conversation they were copied from (:func:`_owner`).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from .database import Database


@dataclass(frozen=True)
class BranchPoint:
    """The branches of a conversation at one of its user messages.

    Attributes:
        position: the message's position in the conversation shown.
        targets: for each sibling message, oldest first, the conversation a chat opens to
            show it (the branch through it shown last).
        index: which of ``targets`` is the conversation shown (0-based).
    """

    position: int
    targets: tuple[str, ...]
    index: int

    @property
    def label(self) -> str:
        """What the arrows show, e.g. ``"2/3"``."""
        return f"{self.index + 1}/{len(self.targets)}"


@dataclass(frozen=True)
class _Node:
    id: str
    branch_of: str | None
    branch_at: int
    shown_at: float
    created_at: float


def start_branch(store: Database, branch_id: str, source_id: str, at: int) -> bool:
    """Record that conversation ``branch_id`` replaces ``source_id``'s message ``at``.

    Call it before the branch's first run saves anything; the run's writer fills in
    the rest (its messages, title, model). Returns False when the history failed.
    """

    def work(db: sqlite3.Connection) -> None:
        now = store.clock()
        source = db.execute(
            "SELECT coalesce(root_id, id), title, system, model FROM conversations WHERE id = ?",
            (source_id,),
        ).fetchone()
        root, title, system, model = source or (source_id, None, None, None)
        family = _family(db, source_id)
        # The conversation that wrote the replaced message, not a branch's copy of it.
        owner = _owner(family, source_id, at)
        if title:  # the recent-chats list tells the branches apart
            title = f"{title.split(' · branch ')[0]} · branch {max(len(family), 1) + 1}"
        db.execute(
            """
            INSERT INTO conversations (id, title, system, model, created_at, updated_at,
              branch_of, branch_at, root_id, shown_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            (branch_id, title, system, model, now, now, owner, at, root, now),
        )

    return store.write(work)


def mark_shown(store: Database, conversation_id: str) -> bool:
    """Remember that a chat now shows ``conversation_id`` (what :func:`shown_branch` follows)."""
    return store.write(
        lambda db: db.execute(
            "UPDATE conversations SET shown_at = ? WHERE id = ?", (store.clock(), conversation_id)
        )
    )


def shown_branch(store: Database, conversation_id: str) -> str:
    """The branch of ``conversation_id``'s tree a chat showed last (itself if none was)."""

    def work(db: sqlite3.Connection) -> str:
        nodes = _family(db, conversation_id)
        shown = [n for n in nodes.values() if n.shown_at > 0]
        return max(shown, key=lambda n: n.shown_at).id if shown else conversation_id

    return store.read(work)


def branch_points(store: Database, conversation_id: str) -> list[BranchPoint]:
    """The user messages of ``conversation_id`` that have siblings, in order."""
    return store.read(lambda db: _branch_points(db, conversation_id))


def _branch_points(db: sqlite3.Connection, conversation_id: str) -> list[BranchPoint]:
    nodes = _family(db, conversation_id)
    if len(nodes) < 2:
        return []
    root = next(iter(nodes.values())).id if nodes else conversation_id
    points = []
    for (position,) in db.execute(
        "SELECT position FROM messages WHERE conversation_id = ? AND role = 'user' "
        "ORDER BY position",
        (conversation_id,),
    ).fetchall():
        owner = _owner(nodes, conversation_id, position)
        found = db.execute(
            "SELECT parent_id FROM messages WHERE conversation_id = ? AND position = ?",
            (owner, position),
        ).fetchone()
        if found is None:
            continue
        siblings = [
            row[0]
            for row in db.execute(
                """
                SELECT m.conversation_id FROM messages m JOIN conversations c
                  ON c.id = m.conversation_id
                WHERE coalesce(c.root_id, c.id) = ? AND m.position = ? AND m.role = 'user'
                  AND m.position >= coalesce(c.branch_at, 0) AND m.parent_id IS ?
                ORDER BY m.id
                """,
                (root, position, found[0]),
            )
        ]
        if len(siblings) > 1 and owner in siblings:
            targets = tuple(_latest_through(nodes, s, position) for s in siblings)
            points.append(BranchPoint(position, targets, siblings.index(owner)))
    return points


def _family(db: sqlite3.Connection, conversation_id: str) -> dict[str, _Node]:
    """Every conversation of ``conversation_id``'s tree, the root first."""
    row = db.execute(
        "SELECT coalesce(root_id, id) FROM conversations WHERE id = ?", (conversation_id,)
    ).fetchone()
    if row is None:
        return {}
    nodes = {}
    for node in db.execute(
        """
        SELECT id, branch_of, coalesce(branch_at, 0), coalesce(shown_at, 0), created_at
        FROM conversations WHERE id = ? OR root_id = ?
        ORDER BY root_id IS NOT NULL, created_at, rowid
        """,
        (row[0], row[0]),
    ):
        nodes[node[0]] = _Node(*node)
    return nodes


def written_spans(db: sqlite3.Connection, conversation_id: str) -> list[tuple[str, int, int]]:
    """Who wrote ``conversation_id``'s rows: ``(conversation, start, end)`` for each span.

    Positions ``start <= p < end`` of ``conversation_id`` are read from that
    conversation's rows (:func:`_owner` for every position at once): the branch's
    own from its ``branch_at`` on, the conversations it left for those before.
    """
    nodes = _family(db, conversation_id)
    spans = []
    owner: str | None = conversation_id
    end = 1 << 62  # no end: the conversation's own rows go on
    while owner is not None:
        node = nodes.get(owner)
        start = node.branch_at if node is not None and node.branch_of is not None else 0
        if start < end:
            spans.append((owner, start, end))
        end = min(end, start)
        owner = node.branch_of if node is not None and start > 0 else None
    return spans


def _owner(nodes: dict[str, _Node], conversation_id: str, position: int) -> str:
    """The conversation that wrote message ``position`` of ``conversation_id`` (not a copy)."""
    node = nodes.get(conversation_id)
    while node is not None and node.branch_of is not None and position < node.branch_at:
        node = nodes.get(node.branch_of)
    return node.id if node is not None else conversation_id


def _latest_through(nodes: dict[str, _Node], owner: str, position: int) -> str:
    """The branch shown last among those that keep ``owner``'s message ``position``."""
    through = [n for n in nodes.values() if _owner(nodes, n.id, position) == owner]
    return max(through, key=lambda n: (n.shown_at, n.id == owner)).id
