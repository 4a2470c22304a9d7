"""Fixtures for provider tests.

* ``wire_server``: a fresh :class:`tests.support.servers.WireServer` on 127.0.0.1
  (scripted replies, a responder and/or a replayed cassette), closed after the test.
* ``cassette_dir``: the root of the copied recordings (``data/cassettes``).
* ``openai_server``: a deterministic model behind the loopback server
  (``tests/support/scripted.py``), for record/replay runs.

Everything else lives in ``tests/support`` (test modules never import each other):

* ``servers``: the server, ``Reply`` and the per-API reply builders
  (``OpenAI.text_stream``, ``Anthropic.stream``, ``Gemini.chunk``, ``Ollama.done``...);
* ``agents``: ``http_agent("openai:gpt-test", server, tools=[...])``, the one agent factory;
* ``cassettes``: ``load_cassette``, ``load_bodies``, ``replies_for`` and tools that
  answer as recorded;
* ``replay``: the replay drivers, one module per API, that run a recorded
  conversation and check it (``replay.openai.replay_tool_cassette(path, server)``...).

Typical use::

    from tests.support.agents import http_agent
    from tests.support.cassettes import DATA, load_cassette, replies_for

    async def test_replay(wire_server):
        cassette = load_cassette(DATA / "llm/openai/test_tool_use_basic.yaml")
        wire_server.add(*replies_for(cassette))
        agent = http_agent("openai:gpt-4o-mini", wire_server)
        ...
        assert wire_server.bodies()[1]["messages"][-1]["role"] == "tool"
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import history
from tests.support.cassettes import DATA
from tests.support.scripted import openai_server  # noqa: F401 (a fixture: the scripted model)

history_home = history.history_home  # the suite's one private-history fixture, and its file
history_db = history.history_db


@pytest.fixture(autouse=True)
def _private_history(history_home: Path) -> None:
    """Agents built here keep their history under tmp_path, never the user's file."""


@pytest.fixture
def cassette_dir() -> Path:
    return DATA
