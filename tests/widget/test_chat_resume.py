"""The chat survives a restart: its transcript comes from the history store.

A first ChatWidget writes a real SQLite history file in a temporary folder; a new
widget (as after a kernel restart) opens it with ChatWidget.resume(),
ChatWidget(conversation=ID) or the recent-chats list, and continues it.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from nbagent import Agent, tool
from nbagent.chat import ChatWidget
from nbagent.errors import ConfigError
from nbagent.providers import Capabilities
from nbagent.testing import ScriptedModel, call, reply


@tool(register=False)
def city_table(n: int = 3) -> str:
    """Cities."""
    return ", ".join(f"city{i}" for i in range(n))


def script(request):
    if "table" in request.prompt and not request.tool_results:
        return reply("Looking.", calls=[call("city_table", n=3)])
    return reply(f"Answer {len(request.messages)}: <b>x</b> **bold**")


async def first_session(path: Path) -> str:
    chat = ChatWidget(Agent(ScriptedModel(script), tools=[city_table], store=path))
    await asyncio.wait_for(chat.submit("show the table"), 10)
    await asyncio.wait_for(chat.submit("and then?"), 10)
    assert chat.conversation_id == chat.agent.conversation.id
    return chat.conversation_id


async def test_resume_shows_the_stored_transcript_and_continues(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    conversation_id = await first_session(path)

    model = ScriptedModel(script)
    chat = ChatWidget.resume(store=path, model=model, tools=[city_table])
    assert chat.conversation_id == conversation_id
    assert [t["prompt"] for t in chat.turns] == ["show the table", "and then?"]
    first, second = (t["html"] for t in chat.turns)
    assert '<details class="nba-round' in first and "city0, city1, city2" in first
    assert "<strong>bold</strong>" in second and "&lt;b&gt;x&lt;/b&gt;" in second
    assert "<b>x</b>" not in second  # the model's markup stays text
    # The redrawn footers say what the live ones said: rounds and tokens, not the model alone.
    live = chat.agent.conversation.messages[1].usage
    assert f"1 round · {live.total_tokens:,} tokens ({live.input_tokens:,} in" in first
    assert "0 rounds · " in second and " tokens (" in second
    assert [r["id"] for r in chat.recent] == [conversation_id]

    result = await asyncio.wait_for(chat.submit("more"), 10)
    assert result.output.startswith("Answer")
    sent = [m.content for m in model.requests[0].messages if m.role == "user"]
    assert sent == ["show the table", "and then?", "more"]  # the stored turns went along
    assert [t["prompt"] for t in chat.turns] == ["show the table", "and then?", "more"]
    # And the history file now has the third turn under the same id.
    again = ChatWidget(conversation=conversation_id[:8], store=path, model=ScriptedModel())
    assert [t["prompt"] for t in again.turns] == ["show the table", "and then?", "more"]


async def test_recent_list_opens_another_conversation(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    older = await first_session(path)
    chat = ChatWidget(Agent(ScriptedModel(script), tools=[], store=path))
    assert chat.turns == [] and chat.recent == []  # nothing read before the list is opened
    await asyncio.wait_for(chat.submit("a new one"), 10)
    chat._handle_custom_msg({"kind": "refresh_recent"}, [])  # the list gets focus
    assert {r["id"] for r in chat.recent} == {older, chat.conversation_id}

    chat._handle_custom_msg({"kind": "open", "id": older}, [])  # picked in the list
    assert chat.conversation_id == older and chat.agent.conversation.id == older
    assert [t["prompt"] for t in chat.turns] == ["show the table", "and then?"]
    chat.new_chat()
    assert chat.turns == [] and chat.conversation_id == chat.agent.conversation.id != older


def test_resume_without_history_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no conversations yet"):
        ChatWidget.resume(store=tmp_path / "empty.db", model=ScriptedModel())
    with pytest.raises(ConfigError, match="needs history"):
        ChatWidget.resume(store=None, model=ScriptedModel())
    with pytest.raises(ConfigError, match="store=None"):
        ChatWidget(Agent(ScriptedModel(), store=None), conversation="c_x")


def footer(turn_html: str) -> str:
    (found,) = re.findall(r'<div class="nba-footer">(.*?)</div>', turn_html)
    return str(found)


async def test_a_resumed_footer_says_what_the_live_one_said(tmp_path: Path) -> None:
    path = tmp_path / "history.db"

    def busy(request):
        return reply("Again.", calls=[call("city_table", n=request.round_index + 1)])

    priced = Capabilities(pricing_id="openai")  # priced as gpt-4o-mini by genai-prices
    model = ScriptedModel(script, model="gpt-4o-mini", capabilities=priced)
    chat = ChatWidget(Agent(model, tools=[city_table], store=path))
    await asyncio.wait_for(chat.submit("show the table"), 10)
    # Keeps calling tools: stopped by max_rounds.
    chat.agent.use_model(ScriptedModel(busy, model="gpt-4o-mini", capabilities=priced))
    chat.set_limits(max_rounds=2)
    await asyncio.wait_for(chat.submit("and more"), 10)
    live = [footer(t["html"]) for t in chat.turns]
    assert re.search(r" · \$\d\.\d+ · \d+(\.\d)? m?s$", live[0])  # the price, the duration
    assert '<span class="nba-stopped">stopped:</span>' in live[1]

    again = ChatWidget.resume(store=path, model=ScriptedModel())
    assert [footer(t["html"]) for t in again.turns] == live  # price, duration, stop reason
    assert again.totals == chat.totals and "$" in again.totals["cost"]
