"""Many processes writing one history file, each opening and closing it per turn.

Issue 19, item 9: two processes each running 15 turns (a new ``Agent(store=db)``
per turn) lost rounds and once failed ``integrity_check``. The history's
per-write file check opened and closed the database file with Python's
``open()``, and on POSIX closing any descriptor of a file drops every lock the
process holds on it, SQLite's included (sqlite.org, "How To Corrupt An SQLite
Database File", 2.2): another process closing its connection then believed it
was the last one and checkpointed and removed the WAL under a live writer.
Here several child processes write many turns at once, each turn with its own
agent and connection closed at the end (the case that lets SQLite remove the
WAL), and every row must be there in a sound file.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.support.history import history_env, query

PROCESSES = 4
TURNS = 30
ROUNDS = 2  # tool rounds per turn, each its own committed write

WRITER = textwrap.dedent(
    """
    import sys, time, warnings
    from pathlib import Path
    from nbagent import Agent, tool
    from nbagent.testing import ScriptedModel, call, reply

    go, name, turns, rounds = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

    @tool
    def echo(text: str) -> str:
        "Say the text back."
        return text

    def script(request):
        if request.round_index < rounds:
            return reply(calls=[call("echo", text=f"{name}-{request.round_index}")])
        return reply("done")

    while not go.exists():  # start together with the others
        time.sleep(0.005)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for number in range(turns):
            agent = Agent(ScriptedModel(script), tools=[echo])
            agent.run_sync(f"{name} turn {number}")
            agent.store.close()  # as a kernel's exit would: SQLite may remove the WAL here
    for warning in caught:
        print("WARNING:", warning.message, file=sys.stderr)
    print("done", len(caught))
    """
)


def test_many_processes_each_opening_the_file_per_turn_lose_nothing(
    tmp_path: Path, history_home: Path
) -> None:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    go = tmp_path / "go"
    names = [f"P{n}" for n in range(PROCESSES)]
    children = [
        subprocess.Popen(
            [sys.executable, str(script), str(go), name, str(TURNS), str(ROUNDS)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=history_env(history_home),
        )
        for name in names
    ]
    time.sleep(1.0)  # all are importing nbagent and waiting for the signal
    go.write_text("go")
    outputs = [child.communicate(timeout=300) for child in children]
    for child, (out, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err
        assert out.strip() == "done 0", err

    db = history_home / "history.db"
    assert query(db, "PRAGMA integrity_check") == [("ok",)]
    runs = PROCESSES * TURNS
    assert query(db, "SELECT count(*) FROM conversations") == [(runs,)]
    assert query(db, "SELECT count(*) FROM messages") == [(2 * runs,)]
    assert query(db, "SELECT count(*) FROM rounds") == [(ROUNDS * runs,)]
    assert query(db, "SELECT count(*) FROM tool_results") == [(ROUNDS * runs,)]
    complete = query(db, "SELECT count(*) FROM messages WHERE stop_reason = 'complete'")
    assert complete == [(runs,)]
    prompts = {row[0] for row in query(db, "SELECT content FROM messages WHERE role='user'")}
    assert prompts == {f"{name} turn {n}" for name in names for n in range(TURNS)}
    results = query(db, "SELECT content, count(*) FROM tool_results GROUP BY content")
    assert sorted(results) == sorted(
        (f"{name}-{r}", TURNS) for name in names for r in range(ROUNDS)
    )
