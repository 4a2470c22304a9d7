"""Images kept in the history: a conversation resumed from the database expands them again.

A tool returns a PNG and a prompt attaches one (``{fig}``); the run goes over a
loopback server speaking each API's wire format. A second Python process resumes
the conversation from the history file and asks again: its request carries the
earlier turns exactly as the live agent sent them, images included.
"""

from __future__ import annotations

import base64
import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from PIL import Image as PILImage

from nbagent import Agent
from nbagent._internal.images import Image, to_image
from nbagent.store import SCHEMA_VERSION, Store
from nbagent.store.image_rows import MAX_IMAGE_BYTES
from nbagent.testing import ScriptedModel, call, reply
from tests.support.agents import TEST_KEY, VERSIONED_BASE_PATHS, http_agent
from tests.support.history import history_env, query
from tests.support.servers import Anthropic, Gemini, Ollama, OpenAI, Reply, WireServer

MODELS = {"openai": "openai:gpt-4o", "anthropic": "anthropic:claude-test",
          "gemini": "gemini:gemini-test", "ollama": "ollama:qwen3"}  # fmt: skip


def chart() -> Any:
    """Draw the chart."""
    return PILImage.new("RGB", (64, 48), (200, 30, 30))


CHART = to_image(chart())
CHART_B64 = base64.b64encode(CHART.data).decode()
FIG = to_image(PILImage.new("RGB", (40, 30), (10, 200, 10)))
FIG_B64 = base64.b64encode(FIG.data).decode()


def _script_tool_round(kind: str, server: WireServer) -> None:
    if kind == "openai":
        server.add(OpenAI.call_stream(("call_A", "chart", "{}")), OpenAI.text_stream("Red."))
    elif kind == "anthropic":
        server.add(Anthropic.stream(calls=[("call_A", "chart", "{}")]), Anthropic.stream("Red."))
    elif kind == "gemini":
        first = Reply.sse([Gemini.chunk(Gemini.call_part("chart", call_id="call_A"),
                                        finish="STOP", usage=(5, 2))])  # fmt: skip
        server.add(first, Gemini.text_stream("Red."))
    else:
        server.add(
            Reply.ndjson([Ollama.call_chunk("chart", {}), Ollama.done()]),
            Reply.ndjson([*Ollama.text_chunks("Red."), Ollama.done()]),
        )


def _script_text(kind: str, server: WireServer, text: str) -> None:
    if kind == "openai":
        server.add(OpenAI.text_stream(text))
    elif kind == "anthropic":
        server.add(Anthropic.stream(text))
    elif kind == "gemini":
        server.add(Gemini.text_stream(text))
    else:
        server.add(Reply.ndjson([*Ollama.text_chunks(text), Ollama.done()]))


def _turns(kind: str, body: dict[str, Any]) -> list[Any]:
    return list(body["contents"] if kind == "gemini" else body["messages"])


RESUME = textwrap.dedent(
    """
    import sys
    from PIL import Image as PILImage
    from nbagent import Agent

    def chart():
        "Draw the chart."
        return PILImage.new("RGB", (64, 48), (200, 30, 30))

    conversation_id, model, base_url, key = sys.argv[1:5]
    agent = Agent.resume(conversation_id, base_url=base_url, api_key=key, env={}, tools=[chart])
    assert agent.model == model, agent.model
    print(agent.run_sync("And now?").output)
    """
)


def _resume_in_child(home: Path, conversation_id: str, kind: str, server: WireServer) -> str:
    base_url = server.url + VERSIONED_BASE_PATHS.get(kind, "")
    done = subprocess.run(
        [sys.executable, "-c", RESUME, conversation_id, MODELS[kind], base_url, TEST_KEY],
        env=history_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini", "ollama"])
def test_resumed_conversation_sends_its_images_again(
    wire_server: WireServer, history_home: Path, history_db: Path, kind: str
) -> None:
    _script_tool_round(kind, wire_server)
    agent = http_agent(MODELS[kind], wire_server, tools=[chart])
    result = agent.run_sync("What colour is the chart?", attachments=[FIG])
    assert result.output == "Red."
    live = _turns(kind, wire_server.bodies()[1])
    live_text = json.dumps(live)
    assert CHART_B64 in live_text and FIG_B64 in live_text  # the live request had both

    # Another process resumes the conversation from the file alone.
    _script_text(kind, wire_server, "Still red.")
    assert _resume_in_child(history_home, agent.conversation.id, kind, wire_server) == "Still red."
    resumed = _turns(kind, wire_server.bodies()[2])
    # The earlier turns go out exactly as the live agent sent them (the answer "Red."
    # and the new prompt follow), so each image is where that API wants it.
    assert resumed[: len(live)] == live
    assert json.dumps(resumed).count(CHART_B64) == 1
    assert json.dumps(resumed).count(FIG_B64) == 1
    stored = query(history_db, "SELECT media_type, width, height, length(data) FROM images")
    assert sorted(stored) == sorted(
        [("image/png", 64, 48, len(CHART.data)), ("image/png", 40, 30, len(FIG.data))]
    )


def test_store_load_gives_back_the_images(history_db: Path) -> None:
    model = ScriptedModel([reply(calls=[call("chart")]), reply("Red.")])
    agent = Agent(model, tools=[chart])
    agent.run_sync("Look", attachments=[FIG])
    loaded = Store(history_db).load(agent.conversation.id)
    user, answer = loaded.messages
    assert user.images == [FIG]
    assert answer.rounds is not None
    (result,) = answer.rounds[0].results
    assert result.images == [CHART]
    assert result.content == agent.conversation.messages[1].rounds[0].results[0].content  # type: ignore[index]
    # The loaded conversation is the one in memory, images and all.
    assert loaded.to_dict() == agent.conversation.to_dict()


def test_an_image_over_the_size_limit_keeps_only_its_size(history_db: Path) -> None:
    big = Image(b"\x89PNG" + b"\0" * (MAX_IMAGE_BYTES + 1), "image/png", 1000, 800)
    agent = Agent(ScriptedModel([reply("ok")]))
    agent.run_sync("Look", attachments=[big, FIG])
    assert query(history_db, "SELECT position, width, length(data) FROM images") == [
        (0, 1000, None),
        (1, 40, len(FIG.data)),
    ]
    user = Store(history_db).load(agent.conversation.id).messages[0]
    assert user.images == [FIG]
    assert user.content.startswith("Look\n[image 1 (1000×800 PNG) was not kept in the history")


def test_deleting_a_conversation_deletes_its_images(history_db: Path) -> None:
    model = ScriptedModel([reply(calls=[call("chart")]), reply("Red.")])
    agent = Agent(model, tools=[chart])
    agent.run_sync("Look", attachments=[FIG])
    assert query(history_db, "SELECT count(*) FROM images") == [(2,)]
    Store(history_db).delete(agent.conversation.id)
    assert query(history_db, "SELECT count(*) FROM images") == [(0,)]


# The schema as version 2 shipped it (before images), with one conversation.
def _make_version_2(path: Path) -> None:
    from nbagent.store.migrations import MIGRATIONS

    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None)
    for migration in MIGRATIONS[:2]:
        migration(db)
    db.executescript(
        """
        INSERT INTO conversations VALUES ('c_v2', 'Chart?', NULL, 'scripted:', 100, 200);
        INSERT INTO messages VALUES (1, 'c_v2', 0, 'user', 'Chart?', NULL, NULL, NULL, NULL,
            NULL, NULL, 100, 100);
        INSERT INTO messages VALUES (2, 'c_v2', 1, 'assistant', 'Red.', 'scripted:',
            'complete', 3, 1, NULL, 0.5, 100, 200);
        INSERT INTO rounds VALUES (1, 2, 0, NULL, 1, 1, 0.1, NULL, 150);
        INSERT INTO tool_calls VALUES (1, 1, 0, 'call_1', 'chart', '{}', NULL, NULL);
        INSERT INTO tool_results VALUES (1, 1, '[image 1: 64×48 PNG, attached]', NULL, NULL,
            NULL, 0.1, 0, 'Image', NULL);
        PRAGMA user_version = 2;
        """
    )
    db.close()


def test_a_version_2_file_opens_and_takes_images(history_db: Path) -> None:
    _make_version_2(history_db)
    loaded = Store(history_db).load("c_v2")
    assert query(history_db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    user, answer = loaded.messages
    assert (user.content, user.images) == ("Chart?", [])
    assert answer.rounds is not None
    (result,) = answer.rounds[0].results
    assert (result.content, result.images) == ("[image 1: 64×48 PNG, attached]", [])

    model = ScriptedModel([reply(calls=[call("chart")]), reply("Still red.")])
    resumed = Agent.resume("c_v2", model=model, tools=[chart])
    assert resumed.run_sync("Again?", attachments=[FIG]).output == "Still red."
    again = Store(history_db).load("c_v2")
    assert len(again.messages) == 4
    assert again.messages[2].images == [FIG]
    assert again.messages[3].rounds is not None
    assert again.messages[3].rounds[0].results[0].images == [CHART]
    assert query(history_db, "PRAGMA integrity_check") == [("ok",)]
