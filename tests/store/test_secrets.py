"""Keys never reach the history file, whatever the run did with them."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from nbagent import Agent, tool
from nbagent.store import Store
from tests.support.history import query
from tests.support.scripted import ScriptedServer


@tool
def weather(city: str) -> str:
    """Current weather for a city; this one also leaks a token from the environment."""
    return f"sunny in {city}, token {os.environ['WEATHER_SERVICE_TOKEN']}"


def file_bytes(history_db: Path) -> bytes:
    """The database, its WAL and shared-memory files, as they are on disk right now."""
    return b"".join(
        Path(str(history_db) + suffix).read_bytes()
        for suffix in ("", "-wal", "-shm")
        if Path(str(history_db) + suffix).exists()
    )


def test_api_key_appears_nowhere_in_the_database_bytes(
    history_db: Path, openai_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    api_key = "nbtest-" + uuid.uuid4().hex + uuid.uuid4().hex  # no well-known key shape
    token = "tok" + uuid.uuid4().hex
    monkeypatch.setenv("WEATHER_SERVICE_TOKEN", token)
    agent = Agent(
        "openai:test-model",
        base_url=openai_server.url,
        api_key=api_key,
        tools=[weather],
        system=f"You may use the key {api_key} and sk-proj-abcdefghijklmnopqrstuvwx.",
    )
    # The key travels everywhere: prompt, tool arguments, tool result, answer.
    result = agent.run_sync(f"What is the weather in {api_key}?")
    assert api_key in result.output and token in result.output
    assert openai_server.headers[0]["authorization"] == f"Bearer {api_key}"
    assert openai_server.requests[1]["messages"][-1]["content"].startswith("sunny in " + api_key)

    data = file_bytes(history_db)  # the store is still open: the rows may live in the WAL only
    assert b"sunny in [redacted], token [redacted]" in data  # what was written, scrubbed
    assert api_key.encode() not in data
    assert token.encode() not in data
    assert b"sk-proj-abcdefghijklmnopqrstuvwx" not in data

    loaded = Store(history_db).load(agent.conversation.id)
    assert loaded.system == "You may use the key [redacted] and [redacted]."
    assert loaded.messages[0].content == "What is the weather in [redacted]?"
    call = loaded.messages[1].rounds[0].calls[0]  # type: ignore[index]
    assert call.arguments == {"city": "[redacted]"}
    assert api_key not in json.dumps(loaded.to_dict())

    assert agent.store is not None
    agent.store.close()  # checkpoint the WAL into the main file and check again
    assert api_key.encode() not in file_bytes(history_db)
    assert query(history_db, "SELECT count(*) FROM tool_results") == [(1,)]


def test_recording_redacts_key_headers(tmp_path: Path, openai_server: ScriptedServer) -> None:
    api_key = "nbtest-" + uuid.uuid4().hex
    recording = tmp_path / "run.jsonl"
    agent = Agent(
        "openai:test-model", base_url=openai_server.url, api_key=api_key, tools=[], record=recording
    )
    agent.run_sync("Hello there")
    assert openai_server.headers[0]["authorization"] == f"Bearer {api_key}"
    text = recording.read_text()
    assert api_key not in text
    (entry,) = [json.loads(line) for line in text.splitlines()]
    assert entry["request"]["headers"]["authorization"] == "[redacted]"
