"""Resume without setup: each finished row is journaled at once; the same call runs the rest."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd

from tests.support.agents import http_agent
from tests.support.scripted import Answer
from tests.support.servers import Reply

ROWS = pd.DataFrame({"n": list(range(12))})


def echo(prompt: str, body: dict) -> Answer:
    return Answer(f"done {prompt}")


def journal(path: Path) -> list[tuple]:
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT key, ok FROM batch_rows").fetchall()
    finally:
        db.close()


def test_the_same_call_again_sends_no_request_for_done_rows(counting, tmp_path):
    server = counting(echo)
    agent = http_agent("openai:gpt-test", server, tools=[], store=tmp_path / "h.db")
    first = agent.map(ROWS, "row {n}", progress=False)
    assert server.count == 12 and len(journal(tmp_path / "h.db")) == 12
    # A new agent (as after a kernel restart) on the same history file.
    again = http_agent("openai:gpt-test", server, tools=[], store=tmp_path / "h.db")
    second = again.map(ROWS, "row {n}", progress=False)
    assert server.count == 12
    pd.testing.assert_frame_equal(first.drop(columns="seconds"), second.drop(columns="seconds"))
    # What decides the answer is in the key: another model or system prompt runs again.
    other = http_agent("openai:gpt-other", server, tools=[], store=tmp_path / "h.db")
    other.map(ROWS.head(2), "row {n}", progress=False)
    assert server.count == 14
    # resume=False starts over.
    again.map(ROWS.head(3), "row {n}", resume=False, progress=False)
    assert server.count == 17


def test_failed_rows_run_again_on_the_next_call(counting, tmp_path):
    broken = {"row 3", "row 7"}

    def script(prompt: str, body: dict):
        if prompt in broken:
            return Reply(500, {"error": {"message": "upstream broke"}})
        return Answer(f"done {prompt}")

    server = counting(script)
    agent = http_agent("openai:gpt-test", server, tools=[], store=tmp_path / "h.db", max_retries=0)
    out = agent.map(ROWS, "row {n}", progress=False)
    assert out["error"].notna().sum() == 2 and "upstream broke" in out.loc[3, "error"]
    broken.clear()
    out = agent.map(ROWS, "row {n}", progress=False)
    assert out["error"].isna().all() and out.loc[3, "output"] == "done row 3"
    assert server.prompts["row 3"] == 2 and server.prompts["row 4"] == 1


CHILD = textwrap.dedent(
    """
    import sys
    import pandas as pd
    from nbagent import Agent

    url, store = sys.argv[1], sys.argv[2]
    agent = Agent("openai:gpt-test", base_url=url + "/v1", api_key="sk-test-0123456789",
                  env={}, tools=[], store=store)
    out = agent.map(pd.DataFrame({"n": list(range(40))}), "row {n}", concurrency=4,
                    progress=False)
    print("ERRORS", int(out["error"].notna().sum()), flush=True)
    """
)


def test_kill_9_mid_batch_then_the_same_call_pays_no_finished_row_twice(counting, tmp_path):
    server = counting(echo, delay=0.05)
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    store = tmp_path / "h.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, str(script), server.url, str(store)], env=env)
    deadline = time.monotonic() + 60
    while server.count < 15 and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert child.returncode == -signal.SIGKILL
    journaled_at_kill = {key for key, ok in journal(store) if ok}
    assert 5 <= len(journaled_at_kill) < 40
    asked_before = server.count

    second = subprocess.run(
        [sys.executable, str(script), server.url, str(store)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "ERRORS 0" in second.stdout, second.stderr
    twice = [prompt for prompt, n in server.prompts.items() if n > 1]
    # Only rows in flight at the kill (at most the concurrency) were asked again.
    assert len(twice) <= 4
    assert server.count == 40 + len(twice)
    assert len({key for key, ok in journal(store) if ok}) == 40
    print(
        f"requests before kill {asked_before}, journaled {len(journaled_at_kill)}, "
        f"after resume {server.count}, asked twice {len(twice)}"
    )


def saved_answers(path: Path) -> list[str]:
    db = sqlite3.connect(path)
    try:
        rows = db.execute(
            "SELECT m.content FROM messages m WHERE m.role = 'assistant' ORDER BY m.content"
        ).fetchall()
        return [content for (content,) in rows]
    finally:
        db.close()


def test_failed_rows_go_to_the_history_by_default_every_row_with_history_true(counting, tmp_path):
    def script(prompt: str, body: dict):
        if prompt == "row 1":
            return Reply(500, {"error": {"message": "upstream broke"}})
        return Answer(f"done {prompt}")

    server = counting(script)
    options = {"tools": [], "max_retries": 0}
    agent = http_agent("openai:gpt-test", server, store=tmp_path / "a.db", **options)
    out = agent.map(ROWS.head(3), "row {n}", progress=False)
    assert out["error"].notna().tolist() == [False, True, False]
    db = sqlite3.connect(tmp_path / "a.db")
    (stop_reason,) = db.execute("SELECT stop_reason FROM messages WHERE role = 'assistant'")
    assert stop_reason == ("error",)  # only the failed row's conversation, to reopen later
    assert db.execute("SELECT count(*) FROM batch_rows").fetchone() == (3,)
    db.close()
    every = http_agent("openai:gpt-test", server, store=tmp_path / "b.db", **options)
    every.map(ROWS.head(3), "row {n}", history=True, progress=False)
    assert saved_answers(tmp_path / "b.db")[1:] == ["done row 0", "done row 2"]
    lean = http_agent("openai:gpt-test", server, store=tmp_path / "c.db", **options)
    lean.map(ROWS.head(3), "row {n}", history=False, progress=False)
    db = sqlite3.connect(tmp_path / "c.db")
    assert db.execute("SELECT count(*) FROM conversations").fetchone() == (0,)
    assert db.execute("SELECT count(*) FROM batch_rows WHERE ok = 1").fetchone() == (2,)
    db.close()
