"""A kernel killed mid-run (kill -9) loses at most the round in flight."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from nbagent import Agent
from nbagent.store import INTERRUPTED_NOTE, Store
from nbagent.testing import ScriptedModel, reply

from .conftest import query

CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from nbagent import Agent, tool
    from nbagent.testing import ScriptedModel, call, reply

    marker = Path(sys.argv[1])

    @tool
    def add(a: int, b: int) -> int:
        "Add two numbers."
        return a + b

    @tool
    def slow_lookup(key: str) -> str:
        "A lookup that never comes back in time."
        marker.write_text("started")
        time.sleep(120)
        return "too late"

    def script(request):
        if request.round_index < 2:
            number = request.round_index
            return reply(f"round {number + 1}", calls=[call("add", a=number, b=10)])
        if request.round_index == 2:
            return reply(calls=[call("slow_lookup", key="k")])
        return reply("finished")

    agent = Agent(ScriptedModel(script), tools=[add, slow_lookup], system="crash test")
    print(agent.conversation.id, flush=True)
    agent.run_sync("Do three rounds.")
    """
)


def test_kill_9_during_round_3_keeps_rounds_1_and_2(tmp_path: Path, db_path: Path) -> None:
    marker = tmp_path / "round3-started"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    child = subprocess.Popen(
        [sys.executable, str(script), str(marker)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        assert child.stdout is not None
        conversation_id = child.stdout.readline().strip()
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            assert time.monotonic() < deadline, "round 3 never started"
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate(timeout=30)  # reaps it and closes the pipes
    assert child.returncode == -signal.SIGKILL

    # Reopen the file as a new kernel would.
    assert query(db_path, "PRAGMA integrity_check") == [("ok",)]
    store = Store(db_path)
    assert store.integrity_check() == "ok"
    conversation = store.load(conversation_id)
    assert conversation.system == "crash test"
    user, answer = conversation.messages
    assert user.content == "Do three rounds."
    assert answer.stop_reason == "interrupted" and answer.content == INTERRUPTED_NOTE
    assert answer.rounds is not None
    assert [r.assistant_text for r in answer.rounds] == ["round 1", "round 2"]
    assert [[c.arguments for c in r.calls] for r in answer.rounds] == [
        [{"a": 0, "b": 10}],
        [{"a": 1, "b": 10}],
    ]
    assert [[res.content for res in r.results] for r in answer.rounds] == [["10"], ["11"]]
    # The round in flight left nothing half-written behind.
    assert query(db_path, "SELECT count(*) FROM tool_calls") == [(2,)]

    # Resuming works: the model sees both saved rounds, and the run is stored.
    model = ScriptedModel(lambda request: reply("picked up where we left off"))
    resumed = Agent.resume(conversation_id, model=model)
    result = resumed.run_sync("Please continue.")
    assert result.output == "picked up where we left off"
    sent = model.requests[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "user", "assistant"]
    assert sent[1].rounds is not None and len(sent[1].rounds) == 2
    again = Store(db_path).load(conversation_id)
    assert [m.stop_reason for m in again.messages if m.role == "assistant"] == [
        "interrupted",
        "complete",
    ]
    assert again.messages[-1].content == "picked up where we left off"
    assert Store(db_path).integrity_check() == "ok"
