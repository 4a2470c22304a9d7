"""Fixtures for provider tests.

* ``wire_server``: a fresh :class:`tests.providers.wire.WireServer` on 127.0.0.1
  (scripted replies and/or a replayed cassette), closed after the test.
* ``cassette_dir``: the root of the copied recordings (``data/cassettes``).

Typical use from any adapter's tests::

    from .cassettes import DATA, load_cassette
    from .wire import Reply, replies_for

    async def test_replay(wire_server):
        cassette = load_cassette(DATA / "llm/openai/test_tool_use_basic.yaml")
        wire_server.add(*replies_for(cassette))
        agent = Agent("openai:gpt-4o-mini", base_url=wire_server.url + "/v1", api_key="k")
        ...
        assert wire_server.bodies()[1]["messages"][-1]["role"] == "tool"

Replaying other recordings (any path; ``DATA / name`` keeps an absolute path):

* requests + responses, one tool conversation per file:
  ``test_openai_replay.test_replay_tool_cassette(wire_server, path)``,
  ``test_anthropic_cassettes.test_replay_tool_cassette(path, wire_server)``,
  ``test_gemini_cassettes.test_replay_tool_cassette(path, stream, wire_server)``,
  ``test_ollama_exchange_replay.replay_ollama(path, wire_server)``;
* response bodies only (Prism ``-1``, ``-2``...), any API:
  ``test_body_series_replay.replay_bodies(provider, paths, wire_server, stream=...)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .cassettes import DATA
from .wire import WireServer


@pytest.fixture(autouse=True)
def _history_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Agents built here keep their history under tmp_path, never the user's file."""
    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path / "nbagent-home"))


@pytest.fixture
def wire_server() -> Iterator[WireServer]:
    server = WireServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def cassette_dir() -> Path:
    return DATA
