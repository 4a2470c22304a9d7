"""The message tree migration: an older history file opens with its chats as straight lines."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from nbagent import Agent
from nbagent.store import Store
from nbagent.store.tree import branch_points, shown_branch
from nbagent.testing import ScriptedModel, reply
from tests.store.test_migrations import make_version_1


def test_an_old_file_gets_parents_as_a_straight_line_and_no_branches(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    make_version_1(path)
    store = Store(path)
    conversation = store.load("c_old")
    assert [m.content for m in conversation.messages] == ["Weather in Paris?", "It is sunny."]
    assert branch_points(store, "c_old") == []
    assert shown_branch(store, "c_old") == "c_old"
    store.close()
    with sqlite3.connect(path) as db:
        parents = db.execute("SELECT id, parent_id FROM messages ORDER BY position").fetchall()
    assert parents == [(1, None), (2, 1)]


async def test_a_run_continuing_an_old_file_links_its_messages(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    make_version_1(path)
    agent = Agent.resume("c_old", store=path, model=ScriptedModel(lambda r: reply("ok")))
    await agent.run("And tomorrow?")
    with sqlite3.connect(path) as db:
        parents = db.execute("SELECT id, parent_id FROM messages ORDER BY position").fetchall()
    assert [p for _i, p in parents] == [None, *[i for i, _p in parents[:-1]]]
