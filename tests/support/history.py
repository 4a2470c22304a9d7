"""One private history per test: ``NBAGENT_HOME`` in a temporary folder, history on.

Use the fixtures (import them into a conftest, or list this module in
``pytest_plugins``)::

    def test_saved(history_db):          # the file this test's agents write
        Agent(ScriptedModel()).run_sync("hi")
        assert query(history_db, "SELECT count(*) FROM messages") == [(2,)]

or, for a process started by the test (a kernel, a script), :func:`history_env`.
Nothing is created until an agent writes: ``history_home`` does not exist yet.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

FILENAME = "history.db"


def use_private_history(monkeypatch: pytest.MonkeyPatch, folder: Path) -> Path:
    """Point this process's history at ``folder`` (history on); returns the file's path."""
    monkeypatch.setenv("NBAGENT_HOME", str(folder))
    monkeypatch.delenv("NBAGENT_HISTORY", raising=False)
    return folder / FILENAME


def history_env(folder: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """An environment for a child process whose history goes to ``folder`` (history on)."""
    env = dict(os.environ if base is None else base)
    env["NBAGENT_HOME"] = str(folder)
    env.pop("NBAGENT_HISTORY", None)
    return env


@pytest.fixture
def history_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's ``NBAGENT_HOME``: a folder under ``tmp_path``, not created yet."""
    return use_private_history(monkeypatch, tmp_path / "nbagent-home").parent


@pytest.fixture
def history_db(history_home: Path) -> Path:
    """The history file this test's agents write by default (exists after the first write)."""
    return history_home / FILENAME


def query(path: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    """Rows from a history file through a separate, fresh connection (as another kernel)."""
    db = sqlite3.connect(path)
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()
