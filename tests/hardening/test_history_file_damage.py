"""A history file damaged while an agent holds it open; a full disk.

Issue 10, item 9: a file overwritten while open let later runs report success
with no warning, and after exit the file was "not a database": those runs were
gone. Now the next write notices, moves the bad file aside, writes the run (and
the conversation before it, from memory) to a fresh file and warns once. A full
disk (a tiny tmpfs when this machine lets the test mount one, and the process's
file size limit in a real child process) says the disk is full.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import uuid
import warnings
from pathlib import Path

import pytest

from nbagent import Agent
from nbagent.store import HistoryWarning, Store
from nbagent.testing import ScriptedModel
from tests.support import history
from tests.support.history import query

ROOT = Path(__file__).resolve().parents[2]
history_home = history.history_home  # the suite's one private-history fixture
history_db = history.history_db


def damage_overwrite(path: Path) -> None:
    size = path.stat().st_size
    path.write_bytes(os.urandom(max(size, 4096)))


def damage_truncate(path: Path) -> None:
    path.write_bytes(b"")


def damage_delete(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


@pytest.mark.parametrize("damage", [damage_overwrite, damage_truncate, damage_delete])
def test_a_file_damaged_while_open_is_noticed_at_the_next_write(history_db, damage):
    agent = Agent(ScriptedModel())
    agent.run_sync("before the damage")
    assert query(history_db, "SELECT count(*) FROM messages") == [(2,)]
    damage(history_db)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent.run_sync("after the damage")
        agent.run_sync("and once more")
    moved = sorted(history_db.parent.glob(f"{history_db.name}.corrupt-*"))
    warned = [str(w.message) for w in caught if issubclass(w.category, HistoryWarning)]
    if damage is damage_delete:
        assert moved == [] and warned == []
    else:
        assert len(warned) == 1 and "moved it to" in warned[0], warned
        assert moved and moved[0].name in warned[0]
    agent.store.close()  # as the kernel's exit would
    # The fresh file holds the whole conversation, every run included.
    assert query(history_db, "PRAGMA integrity_check") == [("ok",)]
    prompts = [p for (p,) in query(history_db, "SELECT content FROM messages WHERE role='user'")]
    assert prompts == ["before the damage", "after the damage", "and once more"]
    loaded = Store(history_db).load(agent.conversation.id)
    assert [m.content for m in loaded.messages][-1] == "You said: and once more"


FULL_CHILD = textwrap.dedent(
    """
    import resource, signal, sys, warnings
    from nbagent import Agent
    from nbagent.testing import ScriptedModel

    limit = int(sys.argv[1])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
    agent = Agent(ScriptedModel(lambda request: "x" * 40_000))
    agent.run_sync("fits")
    if limit:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outputs = [len(agent.run_sync(f"turn {n}").output) for n in range(12)]
    for warning in caught:
        print("WARNING:", warning.message)
    print("OUTPUTS", outputs)
    """
)


def run_child(home: Path, limit: int) -> str:
    done = subprocess.run(
        [sys.executable, "-c", FULL_CHILD, str(limit)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "NBAGENT_HOME": str(home), "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def check_full(out: str, db: Path) -> None:
    assert "OUTPUTS [" + ", ".join(["40000"] * 12) + "]" in out, out  # every run went on
    warned = [line for line in out.splitlines() if line.startswith("WARNING")]
    assert warned and all("disk is full" in line for line in warned), out
    assert len(warned) == 1, warned  # once, not once per run
    assert "disk I/O error\n" not in out
    assert query(db, "PRAGMA integrity_check") == [("ok",)]  # what was saved is intact


def test_the_file_size_limit_says_the_disk_is_full(tmp_path):
    home = tmp_path / "home"
    out = run_child(home, 300_000)
    check_full(out, home / history.FILENAME)


def test_a_full_tmpfs_says_the_disk_is_full(tmp_path):
    mount = Path(f"/tmp/nbagent-full-{uuid.uuid4().hex[:8]}")
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=320k", "tmpfs", str(mount)],
        capture_output=True,
    )
    if made.returncode != 0:
        mount.rmdir()
        pytest.skip("cannot mount a tmpfs here (not root); the file size limit test covers it")
    try:
        out = run_child(mount / "home", 0)
        check_full(out, mount / "home" / history.FILENAME)
    finally:
        subprocess.run(["umount", str(mount)], check=False)
        shutil.rmtree(mount, ignore_errors=True)
