"""Edit and regenerate make branches; the "2/3" arrows switch; history keeps the tree.

Every test writes a real SQLite history file in a temporary folder and reads it back
the way a user would: a new ChatWidget or Agent.resume after a "restart".
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from nbagent import Agent
from nbagent.chat import ChatWidget
from nbagent.testing import ScriptedModel, reply


def echo(request):
    """Answers with every user message it was sent, so the model's view is visible."""
    users = [m.content for m in request.messages if m.role == "user"]
    return reply("saw: " + " | ".join(users))


async def three_turns(path: Path) -> tuple[ChatWidget, ScriptedModel]:
    model = ScriptedModel(echo)
    chat = ChatWidget(Agent(model, store=path))
    for text in ("one", "two", "three"):
        await asyncio.wait_for(chat.submit(text), 10)
    return chat, model


def prompts(chat: ChatWidget) -> list[str]:
    return [t["prompt"] for t in chat.turns]


def labels(chat: ChatWidget) -> list[str | None]:
    return [t.get("branch", {}).get("label") for t in chat.turns]


async def test_edit_sends_the_branch_and_arrows_switch_between_branches(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    chat, model = await three_turns(path)
    original = chat.conversation_id

    result = await asyncio.wait_for(chat.edit(1, "TWO"), 10)
    # The model saw the turns before the edited one, then the edit: not "two", not "three".
    assert result.output == "saw: one | TWO"
    assert prompts(chat) == ["one", "TWO"]
    assert labels(chat) == [None, "2/2"]
    branch = chat.conversation_id
    assert branch != original

    chat.switch_branch(1, -1)  # the "‹" arrow on turn 2
    assert chat.conversation_id == original == chat.agent.conversation.id
    assert prompts(chat) == ["one", "two", "three"]
    assert labels(chat) == [None, "1/2", None]

    chat._handle_custom_msg({"kind": "branch", "turn": 1, "step": 1}, [])  # "›" in the page
    assert chat.conversation_id == branch and prompts(chat) == ["one", "TWO"]

    # The next message continues the branch shown.
    result = await asyncio.wait_for(chat.submit("four"), 10)
    assert result.output == "saw: one | TWO | four"


async def test_regenerate_makes_a_sibling_of_the_last_answer(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    chat, model = await three_turns(path)
    before = len(model.requests)
    await asyncio.wait_for(chat.regenerate(), 10)
    assert len(model.requests) == before + 1
    sent = [m.content for m in model.requests[-1].messages if m.role == "user"]
    assert sent == ["one", "two", "three"]  # the last message once, not twice
    assert prompts(chat) == ["one", "two", "three"]
    assert labels(chat) == [None, None, "2/2"]


async def test_reopening_the_file_shows_the_same_branches_and_resume_follows_the_shown_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "history.db"
    chat, _model = await three_turns(path)
    original = chat.conversation_id
    await asyncio.wait_for(chat.edit(0, "ONE"), 10)
    await asyncio.wait_for(chat.submit("after"), 10)
    edited = chat.conversation_id
    chat.switch_branch(0)  # back to the original, shown last

    # "Restart": a new widget on the same file, by the original's id.
    again = ChatWidget.resume(original, store=path, model=ScriptedModel(echo))
    assert again.conversation_id == original
    assert prompts(again) == ["one", "two", "three"] and labels(again)[0] == "1/2"
    again.switch_branch(0)
    assert again.conversation_id == edited and prompts(again) == ["ONE", "after"]

    # Agent.resume, by either id or none, continues the branch a chat showed last.
    for which in (None, original, edited):
        agent = Agent.resume(which, store=path, model=ScriptedModel(echo))
        assert agent.conversation.id == edited
    agent = Agent.resume(original, store=path, model=ScriptedModel(echo))
    result = await agent.run("next")
    assert result.output == "saw: ONE | after | next"


async def test_every_message_has_its_parent_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    chat, _model = await three_turns(path)
    original = chat.conversation_id
    await asyncio.wait_for(chat.edit(1, "TWO"), 10)
    with sqlite3.connect(path) as db:
        rows = {
            (c, p): (i, parent)
            for i, c, p, parent in db.execute(
                "SELECT id, conversation_id, position, parent_id FROM messages"
            )
        }
    branch = chat.conversation_id
    # The original is a straight line.
    assert rows[(original, 0)][1] is None
    for position in range(1, 6):
        assert rows[(original, position)][1] == rows[(original, position - 1)][0]
    # The edited message's parent is the original's answer before it: a sibling of "two".
    assert rows[(branch, 2)][1] == rows[(original, 1)][0] == rows[(original, 2)][1]
    assert rows[(branch, 3)][1] == rows[(branch, 2)][0]


def test_edit_of_a_turn_that_does_not_exist_says_how_many_there_are(tmp_path: Path) -> None:
    chat = ChatWidget(Agent(ScriptedModel(echo), store=tmp_path / "h.db"))
    with pytest.raises(IndexError, match="has 0 turns"):
        chat.edit(3, "x")
    chat._handle_custom_msg({"kind": "edit", "turn": 3, "text": "x"}, [])
    assert chat.status == "no turn 3: the chat has 0 turns"


async def test_branches_of_a_branch_stay_siblings_of_the_original_message(tmp_path: Path) -> None:
    chat, _model = await three_turns(tmp_path / "history.db")
    original = chat.conversation_id
    await asyncio.wait_for(chat.edit(1, "TWO"), 10)
    await asyncio.wait_for(chat.regenerate(), 10)  # a branch of the branch, same message
    assert labels(chat) == [None, "3/3"]
    # Editing the first message from there: its copy in the branch is the original's.
    result = await asyncio.wait_for(chat.edit(0, "ONE"), 10)
    assert result.output == "saw: ONE"
    assert labels(chat) == ["2/2"]
    chat.switch_branch(0)
    # Back through the first message's arrows: the branch shown last that keeps "one".
    assert prompts(chat) == ["one", "TWO"] and labels(chat) == ["1/2", "3/3"]
    chat.switch_branch(1)  # 3/3 -> 1/3: the original's own line
    assert chat.conversation_id == original and labels(chat) == ["1/2", "1/3", None]


async def test_the_recent_list_tells_branches_apart(tmp_path: Path) -> None:
    chat, _model = await three_turns(tmp_path / "history.db")
    await asyncio.wait_for(chat.edit(2, "THREE"), 10)
    await asyncio.wait_for(chat.edit(0, "ONE"), 10)
    chat.refresh_recent()
    assert sorted(r["title"] for r in chat.recent) == ["one", "one · branch 2", "one · branch 3"]
