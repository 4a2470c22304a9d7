"""A kernel killed mid-run (kill -9) loses at most the round in flight."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nbagent import Agent
from nbagent.store import INTERRUPTED_NOTE, Store
from nbagent.testing import ScriptedModel, reply
from tests.support.history import query
from tests.support.scripted import Answer, ScriptedServer, weather_script

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


def kill_9_when(tmp_path: Path, child_code: str, *args: str, ready: Callable[[], bool]) -> str:
    """Run ``child_code`` in a new Python process, kill -9 it once ``ready()``; its conversation id.

    The child prints its agent's conversation id first, then runs.
    """
    script = tmp_path / "child.py"
    script.write_text(child_code)
    child = subprocess.Popen(
        [sys.executable, str(script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        assert child.stdout is not None
        conversation_id = child.stdout.readline().strip()
        deadline = time.monotonic() + 60
        while not ready():
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            assert time.monotonic() < deadline, "the child never got there"
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate(timeout=30)  # reaps it and closes the pipes
    assert child.returncode == -signal.SIGKILL
    return conversation_id


def test_kill_9_during_round_3_keeps_rounds_1_and_2(tmp_path: Path, history_db: Path) -> None:
    marker = tmp_path / "round3-started"
    conversation_id = kill_9_when(tmp_path, CHILD, str(marker), ready=marker.exists)

    # Reopen the file as a new kernel would.
    assert query(history_db, "PRAGMA integrity_check") == [("ok",)]
    store = Store(history_db)
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
    assert query(history_db, "SELECT count(*) FROM tool_calls") == [(2,)]
    # The listing (%agent history --all) says so too, not NaN.
    listed = store.history(all=True)
    assert listed.loc[listed["id"] == conversation_id, "stop_reason"].tolist() == ["interrupted"]

    # Resuming works: the model sees both saved rounds, and the run is stored.
    model = ScriptedModel(lambda request: reply("picked up where we left off"))
    resumed = Agent.resume(conversation_id, model=model)
    result = resumed.run_sync("Please continue.")
    assert result.output == "picked up where we left off"
    sent = model.requests[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "user", "assistant"]
    assert sent[1].rounds is not None and len(sent[1].rounds) == 2
    again = Store(history_db).load(conversation_id)
    assert [m.stop_reason for m in again.messages if m.role == "assistant"] == [
        "interrupted",
        "complete",
    ]
    assert again.messages[-1].content == "picked up where we left off"
    assert Store(history_db).integrity_check() == "ok"


HTTP_CHILD = textwrap.dedent(
    """
    import sys
    from nbagent import Agent, tool

    @tool
    def weather(city: str) -> str:
        "Current weather for a city."
        return f"sunny in {city}, 21 C"

    agent = Agent("openai:test-model", base_url=sys.argv[1], api_key="k" * 20, tools=[weather])
    print(agent.conversation.id, flush=True)
    agent.run_sync("What is the weather in Paris?")
    """
)


@pytest.mark.parametrize("hanging", [1, 2])
def test_kill_9_while_a_model_request_waits_keeps_what_came_before(
    tmp_path: Path, history_db: Path, openai_server: ScriptedServer, hanging: int
) -> None:
    """Killed while request 1 (or 2) waits for the server: the prompt (and round 1) are saved."""
    arrived, release = threading.Event(), threading.Event()

    def script(body: dict[str, Any]) -> Answer:
        if len(openai_server.requests) == hanging:
            arrived.set()
            release.wait(60)  # the reply never reaches the child: it is killed meanwhile
        return weather_script(body)

    openai_server.script = script
    try:
        conversation_id = kill_9_when(tmp_path, HTTP_CHILD, openai_server.url, ready=arrived.is_set)
    finally:
        release.set()

    assert query(history_db, "PRAGMA integrity_check") == [("ok",)]
    user, answer = Store(history_db).load(conversation_id).messages
    assert user.content == "What is the weather in Paris?"
    assert answer.stop_reason == "interrupted" and answer.content == INTERRUPTED_NOTE
    finished_rounds = [
        ([c.arguments for c in r.calls], [x.content for x in r.results])
        for r in answer.rounds or []
    ]
    if hanging == 1:
        assert finished_rounds == []
    else:  # round 1 was saved before request 2 went out
        assert finished_rounds == [([{"city": "Paris"}], ["sunny in Paris, 21 C"])]
