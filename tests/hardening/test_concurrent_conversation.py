"""Two writers continuing one conversation never lose a completed turn.

Issue 10, item 8: two kernels that ``Agent.resume`` the same conversation and
each run 10 turns stored only 11 to 14 of the 21 user turns. Now the later
writer forks: its run (and the turns before it) go to a new conversation titled
``[fork of <id>]`` with a HistoryWarning, and the other writer's turns stay.
Real child processes, started together; and the same-process neighbour (two
Agents resuming one conversation, turns interleaved).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

from nbagent import Agent
from nbagent.errors import ConfigError
from nbagent.store import HistoryWarning
from nbagent.testing import ScriptedModel
from tests.support import history
from tests.support.history import query

ROOT = Path(__file__).resolve().parents[2]
history_home = history.history_home  # the suite's one private-history fixture
history_db = history.history_db

CHILD = textwrap.dedent(
    """
    import sys, time, warnings
    from pathlib import Path
    from nbagent import Agent
    from nbagent.testing import ScriptedModel

    go, name, conversation_id = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    agent = Agent.resume(conversation_id, model=ScriptedModel())  # echoes the prompt
    while not go.exists():  # start together with the other process
        time.sleep(0.005)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for number in range(10):
            agent.run_sync(f"{name} turn {number}")
            time.sleep(0.01)
    for warning in caught:
        print("WARNING:", warning.message, file=sys.stderr)
    print("done", agent.conversation.id)
    """
)


def user_turns(db: Path) -> list[tuple[str, str]]:
    return query(
        db,
        "SELECT conversation_id, content FROM messages WHERE role = 'user' ORDER BY id",
    )


def assert_well_formed(db: Path) -> None:
    assert query(db, "PRAGMA integrity_check") == [("ok",)]
    for (conversation_id,) in query(db, "SELECT id FROM conversations"):
        rows = query(
            db,
            "SELECT position, role, finished_at IS NOT NULL FROM messages "
            "WHERE conversation_id = ? ORDER BY position",
            conversation_id,
        )
        assert [r[0] for r in rows] == list(range(len(rows))), (conversation_id, rows)
        assert [r[1] for r in rows] == ["user", "assistant"] * (len(rows) // 2)
        assert all(r[2] for r in rows), rows


def test_two_processes_continuing_one_conversation_lose_no_turn(tmp_path, history_db):
    first = Agent(ScriptedModel())
    first.run_sync("the original turn")
    conversation_id = first.conversation.id
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    go = tmp_path / "go"
    children = [
        subprocess.Popen(
            [sys.executable, str(script), str(go), name, conversation_id],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},  # this checkout's nbagent
            cwd=ROOT,
        )
        for name in ("A", "B")
    ]
    time.sleep(1.0)  # both are importing nbagent and resuming
    go.write_text("go")
    outputs = [child.communicate(timeout=240) for child in children]
    for child, (out, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err
        assert out.startswith("done"), err

    turns = user_turns(history_db)
    prompts = [content for _, content in turns]
    for name in "AB":
        for number in range(10):
            assert f"{name} turn {number}" in prompts, (name, number, prompts)
    assert "the original turn" in prompts
    assert_well_formed(history_db)
    # Whoever wrote later forked once, visibly; the original keeps the other's turns.
    titles = [t for (t,) in query(history_db, "SELECT title FROM conversations")]
    forks = [t for t in titles if t and t.startswith(f"[fork of {conversation_id}]")]
    assert len(forks) >= 1, titles
    errs = "".join(err for _, err in outputs)
    assert "fork" in errs and "UNIQUE constraint" not in errs, errs
    # each process's own turns stay in order within its conversation
    for name in "AB":
        mine = [(c, p) for c, p in turns if p.startswith(f"{name} turn")]
        assert [p for _, p in mine] == [f"{name} turn {n}" for n in range(10)]


def test_two_agents_in_one_process_resuming_one_conversation_lose_no_turn(history_db):
    first = Agent(ScriptedModel())
    first.run_sync("start")
    one = Agent.resume(first.conversation.id, model=ScriptedModel())
    two = Agent.resume(first.conversation.id, model=ScriptedModel())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for number in range(5):
            one.run_sync(f"one {number}")
            two.run_sync(f"two {number}")
    prompts = [p for _, p in user_turns(history_db)]
    for number in range(5):
        assert f"one {number}" in prompts and f"two {number}" in prompts, prompts
    assert_well_formed(history_db)
    assert [w for w in caught if issubclass(w.category, HistoryWarning)], "no fork warning"
    assert one.conversation.id != two.conversation.id


async def test_the_chat_widget_and_a_cell_on_one_agent_take_turns(history_db):
    """A second prompt while the widget answers gets a clear error, not a mixed-up turn."""
    pytest.importorskip("ipywidgets")
    from nbagent.chat import ChatWidget

    agent = Agent(ScriptedModel(chunk_size=2, delay=0.01))
    chat = ChatWidget(agent)
    widget_prompt = "from the widget " + "w " * 30
    task = chat.submit(widget_prompt)
    assert task is not None
    await asyncio.sleep(0.05)  # the widget's reply is streaming now
    with pytest.raises(ConfigError, match="already running"):
        await asyncio.to_thread(agent.run_sync, "from a cell")
    result = await task
    assert result is not None and result.output == "You said: " + widget_prompt.strip()
    after = await asyncio.to_thread(agent.run_sync, "from a cell")
    assert after.output == "You said: from a cell"
    pairs = [(m.role, m.content) for m in agent.conversation.messages]
    assert pairs == [
        ("user", widget_prompt.strip()),
        ("assistant", "You said: " + widget_prompt.strip()),
        ("user", "from a cell"),
        ("assistant", "You said: from a cell"),
    ]
    stored = query(history_db, "SELECT role, content FROM messages ORDER BY position")
    assert [tuple(r) for r in stored] == pairs
