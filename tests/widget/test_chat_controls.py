"""The chat's controls: model picker, limits of the next turns, the conversation's totals."""

from __future__ import annotations

import asyncio

from nbagent import Agent, tool
from nbagent.chat import ChatWidget
from nbagent.testing import ScriptedModel, call, reply


async def test_limits_changed_in_the_page_apply_to_the_next_turn() -> None:
    model = ScriptedModel(lambda r: reply(calls=[call("noop")]))  # never answers

    @tool(register=False)
    def noop() -> str:
        """Does nothing."""
        return "ok"

    chat = ChatWidget(Agent(model, tools=[noop], store=None))
    assert chat.limits == {"max_rounds": 10, "max_cost": None}
    chat._handle_custom_msg({"kind": "limits", "limits": {"max_rounds": "2"}}, [])
    assert chat.limits == {"max_rounds": 2, "max_cost": None}
    result = await asyncio.wait_for(chat.submit("loop forever"), 10)
    assert result.stop_reason == "max_rounds" and len(result.rounds) == 2

    chat._handle_custom_msg({"kind": "limits", "limits": {"max_rounds": "-1"}}, [])
    assert "max_rounds" in chat.status and chat.limits["max_rounds"] == 2  # refused, kept
    chat._handle_custom_msg({"kind": "limits", "limits": {"timeout": "1"}}, [])
    assert chat.status == "the chat changes max_rounds, max_cost, not timeout"


async def test_model_picker_switches_model_and_keeps_the_chat() -> None:
    chat = ChatWidget(Agent(ScriptedModel(["first"]), store=None))
    await asyncio.wait_for(chat.submit("hi"), 10)
    assert chat.model_name == chat.agent.model
    chat._handle_custom_msg({"kind": "model", "model": "nosuchprovider:x"}, [])
    assert "nosuchprovider" in chat.status and chat.model_name == chat.agent.model
    assert chat.totals["tokens"] > 0 and chat.totals["cost"] in ("$0", "unknown")
    chat.use_model("ollama:qwen3")  # any model string; no request made until the next turn
    assert chat.model_name == "ollama:qwen3" == chat.agent.model
    assert [t["prompt"] for t in chat.turns] == ["hi"]
