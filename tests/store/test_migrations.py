"""Opening a file written by an older nbagent migrates it and keeps its data."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

from nbagent import Agent
from nbagent.store import SCHEMA_VERSION, Store
from nbagent.testing import ScriptedModel, reply
from tests.support.history import query

# The schema as version 1 shipped it (before value previews and the listing index).
VERSION_1 = """
CREATE TABLE conversations (
    id TEXT PRIMARY KEY, title TEXT, system TEXT, model TEXT,
    created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    position INTEGER NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, model TEXT,
    stop_reason TEXT, input_tokens INTEGER, output_tokens INTEGER, provider_data TEXT,
    duration_s REAL, created_at REAL NOT NULL, finished_at REAL,
    UNIQUE (conversation_id, position));
CREATE TABLE rounds (
    id INTEGER PRIMARY KEY,
    message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    position INTEGER NOT NULL, assistant_text TEXT,
    input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
    duration_s REAL NOT NULL DEFAULT 0, provider_data TEXT, created_at REAL NOT NULL,
    UNIQUE (message_id, position));
CREATE TABLE tool_calls (
    id INTEGER PRIMARY KEY,
    round_id INTEGER NOT NULL REFERENCES rounds(id) ON DELETE CASCADE,
    position INTEGER NOT NULL, call_id TEXT NOT NULL, name TEXT NOT NULL,
    arguments TEXT NOT NULL, raw_arguments TEXT, provider_data TEXT,
    UNIQUE (round_id, position));
CREATE TABLE tool_results (
    tool_call_id INTEGER PRIMARY KEY REFERENCES tool_calls(id) ON DELETE CASCADE,
    ok INTEGER NOT NULL, content TEXT NOT NULL, error TEXT, traceback TEXT, approval TEXT,
    duration_s REAL NOT NULL DEFAULT 0, truncated INTEGER NOT NULL DEFAULT 0);
"""

OLD_ROWS = """
INSERT INTO conversations VALUES ('c_old', 'Weather?', 'Be nice.', 'openai:gpt-4o', 100, 200);
INSERT INTO messages VALUES (1, 'c_old', 0, 'user', 'Weather in Paris?', NULL, NULL,
    NULL, NULL, NULL, NULL, 100, 100);
INSERT INTO messages VALUES (2, 'c_old', 1, 'assistant', 'It is sunny.', 'openai:gpt-4o',
    'complete', 30, 12, NULL, 1.5, 100, 200);
INSERT INTO rounds VALUES (1, 2, 0, 'Checking.', 10, 5, 0.7,
    '{"thinking": [{"signature": "abc"}]}', 150);
INSERT INTO tool_calls VALUES (1, 1, 0, 'call_1', 'weather', '{"city": "Paris"}', NULL, NULL);
INSERT INTO tool_results VALUES (1, 1, 'sunny, 21 C', NULL, NULL, NULL, 0.2, 0);
"""


def make_version_1(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    db.executescript(VERSION_1 + OLD_ROWS + "PRAGMA user_version = 1;")
    db.close()


def test_version_1_file_is_migrated_and_its_data_kept(history_db: Path) -> None:
    make_version_1(history_db)
    conversation = Store(history_db).load("c_old")
    assert query(history_db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    columns = {row[1] for row in query(history_db, "PRAGMA table_info(tool_results)")}
    assert {"value_type", "preview"} <= columns
    indexes = {row[1] for row in query(history_db, "PRAGMA index_list(conversations)")}
    assert "conversations_by_update" in indexes

    assert conversation.system == "Be nice."
    user, answer = conversation.messages
    assert user.content == "Weather in Paris?"
    assert answer.content == "It is sunny." and answer.stop_reason == "complete"
    assert answer.rounds is not None
    (tool_round,) = answer.rounds
    assert tool_round.provider_data == {"thinking": [{"signature": "abc"}]}
    assert tool_round.calls[0].arguments == {"city": "Paris"}
    assert tool_round.results[0].content == "sunny, 21 C"

    # New runs write into the migrated file, next to the old data.
    model = ScriptedModel([reply("Still sunny.")])
    resumed = Agent.resume("c_old", model=model)
    assert resumed.run_sync("And tomorrow?").output == "Still sunny."
    sent = model.requests[0].messages
    assert [m.content for m in sent[:3]] == ["Weather in Paris?", "It is sunny.", "And tomorrow?"]
    assert len(Store(history_db).load("c_old").messages) == 4
    assert query(history_db, "PRAGMA integrity_check") == [("ok",)]


def test_empty_file_from_version_0(history_db: Path) -> None:
    history_db.parent.mkdir(parents=True)
    sqlite3.connect(history_db).close()  # a zero-byte file: version 0, no tables
    Agent(ScriptedModel()).run_sync("hi")
    assert query(history_db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert query(history_db, "SELECT count(*) FROM messages") == [(2,)]


def test_two_stores_migrating_at_once_migrate_once(history_db: Path) -> None:
    make_version_1(history_db)
    stores = [Store(history_db) for _ in range(4)]
    errors: list[BaseException] = []

    def open_one(store: Store) -> None:
        try:
            store.load("c_old")
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=open_one, args=(s,)) for s in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert query(history_db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    round_json = query(history_db, "SELECT provider_data FROM rounds")[0][0]
    assert json.loads(round_json) == {"thinking": [{"signature": "abc"}]}
