"""Several kernels share one history file."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.support.history import query

WRITER = textwrap.dedent(
    """
    import sys, time, warnings
    from pathlib import Path
    from nbagent import Agent, tool
    from nbagent.testing import ScriptedModel, call, reply

    go, name = Path(sys.argv[1]), sys.argv[2]
    other = "B" if name == "A" else "A"

    @tool
    def add(a: int, b: int) -> int:
        "Add two numbers."
        return a + b

    def script(request):
        if request.round_index == 0:
            return reply(calls=[call("add", a=1, b=2)])
        return reply("3")

    while not go.exists():  # start together with the other process
        time.sleep(0.005)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for number in range(100):
            if number == 50:  # halfway: wait for the other writer to get halfway too
                (go.parent / f"{name}-halfway").write_text("")
                waited = 0
                while not (go.parent / f"{other}-halfway").exists():
                    time.sleep(0.005)
                    waited += 1
                    if waited > 24_000:
                        sys.exit(f"{other} never got halfway")
            Agent(ScriptedModel(script), tools=[add]).run_sync(f"{name} run {number}")
    for warning in caught:
        print("WARNING:", warning.message, file=sys.stderr)
    print("done", len(caught))
    """
)


def test_two_processes_each_writing_100_runs(tmp_path: Path, history_db: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    go = tmp_path / "go"
    children = [
        subprocess.Popen(
            [sys.executable, str(script), str(go), name],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=os.environ.copy(),
        )
        for name in ("A", "B")
    ]
    time.sleep(1.0)  # both are importing nbagent and waiting for the signal
    go.write_text("go")
    outputs = [child.communicate(timeout=240) for child in children]
    for child, (out, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err
        assert out.strip() == "done 0", err
        assert "locked" not in err.lower() and "warning" not in err.lower(), err

    assert query(history_db, "SELECT count(*) FROM conversations") == [(200,)]
    assert query(history_db, "SELECT count(*) FROM messages") == [(400,)]
    assert query(history_db, "SELECT count(*) FROM rounds") == [(200,)]
    assert query(history_db, "SELECT count(*) FROM tool_calls") == [(200,)]
    assert query(history_db, "SELECT count(*) FROM tool_results WHERE content = '3'") == [(200,)]
    prompts = {
        row[0] for row in query(history_db, "SELECT content FROM messages WHERE role='user'")
    }
    assert prompts == {f"{name} run {n}" for name in "AB" for n in range(100)}
    answers = query(history_db, "SELECT count(*) FROM messages WHERE stop_reason = 'complete'")
    assert answers == [(200,)]
    assert query(history_db, "PRAGMA integrity_check") == [("ok",)]

    # The two writers really shared the file while both had it open: each waited
    # halfway for the other, so each one's first half is stored before the other's
    # second half (an order, not a timing).
    def rowids(name: str, numbers: range) -> list[int]:
        return [
            row[0]
            for row in query(history_db, "SELECT rowid, content FROM messages WHERE role='user'")
            if row[1].startswith(f"{name} run ") and int(row[1].split()[-1]) in numbers
        ]

    first, second = range(50), range(50, 100)
    assert max(rowids("A", first)) < min(rowids("B", second))
    assert max(rowids("B", first)) < min(rowids("A", second))


GARBAGE = textwrap.dedent(
    """
    import faulthandler, gc, os, sys, tempfile
    from nbagent import Agent

    faulthandler.dump_traceback_later(120, exit=True)  # a hang fails with every stack
    from nbagent.testing import ScriptedModel

    # Agents kept alive by a cycle (as a notebook's objects often are) are freed by the
    # garbage collector whenever it next runs: on any thread, at any allocation, also
    # while nbagent is opening the next history file. Many thresholds move that moment.
    for threshold in range(1, 301):
        gc.set_threshold(threshold, 1, 1)
        os.environ["NBAGENT_HOME"] = tempfile.mkdtemp(dir=sys.argv[1])
        agent = Agent(ScriptedModel(lambda request: "hi"))
        agent.itself = agent
        assert agent.run_sync("x").output == "hi"
        del agent
    print("done")
    """
)


def test_garbage_collection_while_a_history_file_opens_never_hangs_the_runs(
    tmp_path: Path,
) -> None:
    # A forgotten Store closed by the collector inside the opening of another history
    # file used to wait for a lock its own thread held: every later run hung for good.
    script = tmp_path / "garbage.py"
    script.write_text(GARBAGE)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "done"
    # Every run was saved, each in its own file.
    assert len(list(tmp_path.glob("tmp*/history.db"))) == 300
