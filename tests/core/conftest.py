"""Fixtures shared by the core-engine tests."""

from __future__ import annotations

import pytest

from nbagent import REGISTRY


@pytest.fixture(autouse=True)
def clean_registry():
    """Each test starts and ends with the kernel-wide registry as it found it."""
    saved = dict(REGISTRY)
    yield
    REGISTRY.clear()
    for t in saved.values():
        REGISTRY.add(t)


@pytest.fixture(autouse=True)
def private_history(tmp_path, monkeypatch):
    """Runs write their history to a per-test folder, never the user's database."""
    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path / "nbagent-home"))
    monkeypatch.delenv("NBAGENT_HISTORY", raising=False)
