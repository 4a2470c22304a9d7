"""Fixtures for the history store and record/replay tests.

Every test gets its own ``NBAGENT_HOME`` (a temporary folder, see
``tests/support/history.py``), so nothing is ever written to the real user data
directory; the suite's conftest keeps provider keys from the environment away.

``openai_server`` is the suite's loopback server (``tests/support/servers.py``)
speaking the OpenAI Chat Completions wire format (JSON or SSE, as the request
asks; Ollama's /api/chat too). It decides each reply from the request with a
small script, like a deterministic model: when the conversation's last message
is the user's and a tool is offered, it asks for the tool; after tool results,
it answers with them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support import history
from tests.support.scripted import openai_server  # noqa: F401 (a fixture: the scripted model)

history_home = history.history_home  # the suite's one private-history fixture, and its file
history_db = history.history_db


@pytest.fixture(autouse=True)
def _private_history(history_home: Path) -> None:
    """Every test here has its own NBAGENT_HOME, with history on."""


PYTHON = sys.executable
