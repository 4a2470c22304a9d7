"""Fixtures shared by the core-engine tests."""

from __future__ import annotations

import pytest

from nbagent import REGISTRY
from tests.support import history


@pytest.fixture(autouse=True)
def clean_registry():
    """Each test starts and ends with the kernel-wide registry as it found it."""
    saved = dict(REGISTRY)
    yield
    REGISTRY.clear()
    for t in saved.values():
        REGISTRY.add(t)


history_home = history.history_home  # the suite's one private-history fixture
history_db = history.history_db


@pytest.fixture(autouse=True)
def private_history(history_home):
    """Runs write their history to a per-test folder, never the user's database."""
