"""Item 7: what nbagent writes is readable by its owner only, whatever the umask.

Under umask 022 the history database (and its -wal/-shm), ``NBAGENT_LOG_RAW`` files
and recordings were 0644 in 0755 folders: every local user could read the prompts,
answers, tool results and images in them. Each is now 0600 in a 0700 folder. The
run happens in a real child process (its own umask) against a loopback server.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.hardening.faults import run_child

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")

SCENARIO = """
import stat
from pathlib import Path
from tests.support.agents import http_agent
from tests.support.scripted import Answer, ScriptedReplies
from tests.support.servers import WireServer

os.umask({umask})
base = Path({base!r})
os.environ["NBAGENT_LOG_RAW"] = str(base / "raw" / "logs")

@tool(register=False)
def lookup(city: str) -> str:
    '''The weather.'''
    return "sunny in " + city

def script(body):
    if body["messages"][-1]["role"] == "user":
        return Answer("", [("lookup", {{"city": "Oslo"}})])
    return Answer("Sunny.")

server = WireServer(responder=ScriptedReplies(script))
agent = http_agent(
    "openai:gpt-test", server, tools=[lookup],
    store=base / "history" / "deep" / "history.db",
    record=base / "recordings" / "run.jsonl",
)
for prompt in ("Weather in Oslo?", "And again?"):
    assert agent.run_sync(prompt).output == "Sunny."
modes = {{}}
for path in sorted(base.rglob("*")):
    modes[str(path.relative_to(base))] = oct(stat.S_IMODE(path.stat().st_mode))
server.close()
done(modes=modes)
"""


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_history_raw_logs_and_recordings_are_0600_in_0700_folders(tmp_path: Path, umask: int):
    base = tmp_path / "out"
    base.mkdir()
    modes = run_child(SCENARIO.format(umask=umask, base=str(base)), tmp_path / "home")["modes"]
    files = {p: m for p, m in modes.items() if (base / p).is_file()}
    folders = {p: m for p, m in modes.items() if (base / p).is_dir()}
    assert {"history/deep/history.db", "recordings/run.jsonl"} <= set(files)
    assert any(p.startswith("raw/logs/") for p in files), modes
    assert "history/deep/history.db-wal" in files  # WAL mode: SQLite made it after ours
    assert {p: m for p, m in files.items() if m != oct(0o600)} == {}
    assert {p: m for p, m in folders.items() if m != oct(0o700)} == {}
    assert len(folders) >= 6  # history, deep, recordings, raw, logs, the day's folder


def test_an_existing_history_file_others_can_read_is_tightened(tmp_path: Path):
    from nbagent.store import Store

    path = tmp_path / "history.db"
    Store(path).history()  # creates it
    os.chmod(path, 0o644)
    store = Store(path)
    store.history()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
