"""What a chat keeps beside the messages: the text as typed, and each answer's duration.

Written and read through a real history file; a branch reads its copied rows as
the conversation it left.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from nbagent import Agent
from nbagent.store import Store
from nbagent.store.chat_rows import UserView, chat_rows, keep_user_view
from nbagent.store.tree import start_branch
from nbagent.testing import ScriptedModel
from tests.support.history import query


def test_views_and_durations_come_back_and_a_branch_reads_the_rows_it_copied(
    history_db: Path,
) -> None:
    agent = Agent(ScriptedModel(lambda r: "ok"))
    first = agent.run_sync("sent one")
    agent.run_sync("sent two")
    store = Store(history_db)
    conversation = first.conversation_id
    view = UserView("typed @one", ("Sent to the model: one",))
    assert keep_user_view(store, conversation, 0, view)
    assert not keep_user_view(store, conversation, 1, view)  # an answer, not a user message
    rows = chat_rows(store, conversation)
    assert rows.views == {0: view}
    elapsed = [
        r[0]
        for r in query(
            history_db, "SELECT duration_s FROM messages WHERE role = 'assistant' ORDER BY position"
        )
    ]
    assert rows.durations == {1: elapsed[0], 3: elapsed[1]} and all(s > 0 for s in elapsed)

    # A branch at message 2 copies messages 0 and 1: they read as the original's.
    branch = Agent(ScriptedModel(lambda r: "ok"))
    branch.conversation.messages = agent.conversation.messages[:2]
    start_branch(store, branch.conversation.id, conversation, 2)
    branch.run_sync("sent other")
    assert keep_user_view(store, branch.conversation.id, 2, UserView("typed @other"))
    rows = chat_rows(store, branch.conversation.id)
    assert rows.views == {0: view, 2: UserView("typed @other")}
    assert set(rows.durations) == {1, 3} and rows.durations[1] == elapsed[0]

    # A branch of the branch at message 4 reads 0-1 from the original, 2-3 from the branch.
    twig = Agent(ScriptedModel(lambda r: "ok"))
    twig.conversation.messages = branch.conversation.messages[:4]
    start_branch(store, twig.conversation.id, branch.conversation.id, 4)
    twig.run_sync("sent last")
    assert keep_user_view(store, twig.conversation.id, 4, UserView("typed @last"))
    rows = chat_rows(store, twig.conversation.id)
    assert rows.views == {0: view, 2: UserView("typed @other"), 4: UserView("typed @last")}
    assert set(rows.durations) == {1, 3, 5}


def test_a_kept_view_is_redacted(history_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "nbtest-" + uuid.uuid4().hex
    monkeypatch.setenv("SERVICE_TOKEN", secret)
    agent = Agent(ScriptedModel(lambda r: "ok"))
    result = agent.run_sync("hello")
    store = Store(history_db)
    assert keep_user_view(store, result.conversation_id, 0, UserView(f"use {secret}", (secret,)))
    (stored,) = query(history_db, "SELECT user_view FROM messages WHERE position = 0")
    assert secret[:12] not in stored[0] and "[redacted]" in stored[0]


def test_a_view_that_does_not_parse_is_left_out(history_db: Path) -> None:
    result = Agent(ScriptedModel(lambda r: "ok")).run_sync("hello")
    store = Store(history_db)
    store.write(lambda db: db.execute("UPDATE messages SET user_view = '{not json' "))
    assert chat_rows(store, result.conversation_id).views == {}
