"""What the chat's controls show and change: approval rows, model, limits and totals.

The model picker takes the agent's model or any model string
(:meth:`~nbagent.Agent.use_model`); the limits are the run settings a user changes
most (``max_rounds``, ``max_cost``), kept on the agent so every later turn uses
them. The totals add up the conversation's tokens and cost.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ..cost import format_cost
from ..kernel.display import code_html, code_of
from ..messages import Conversation, ToolCall
from ..render import APPROVAL_LIMIT, call_signature

if TYPE_CHECKING:
    from ..agent import Agent

LIMITS = ("max_rounds", "max_cost")
"""The run settings the chat shows and changes."""


def approval_state(call: ToolCall) -> dict[str, str]:
    """What the page shows for a waiting call.

    A plain-text question, and for ``run_python`` the whole code, highlighted
    (escaped HTML).
    """
    code = code_of(call)
    if code is None:
        question = f"Allow {call_signature(call, limit=APPROVAL_LIMIT)}?"
        return {"id": call.id, "tool": call.name, "question": question, "code_html": ""}
    question = f"Allow {call.name} to run this code?"
    return {"id": call.id, "tool": call.name, "question": question, "code_html": code_html(code)}


def settle(future: asyncio.Future[bool], approved: bool) -> None:
    """Give a waiting approval its answer (on the future's own loop), once."""
    if not future.done():
        future.set_result(approved)


def limits_of(agent: Agent) -> dict[str, Any]:
    """The limits the page shows: ``{"max_rounds": 10, "max_cost": None}``."""
    return {name: getattr(agent.settings, name) for name in LIMITS}


def set_limits(agent: Agent, changes: dict[str, Any]) -> None:
    """Change the agent's limits for every later turn.

    Raises:
        ValueError: a name that is not one of :data:`LIMITS`, or a value out of range.
    """
    unknown = sorted(set(changes) - set(LIMITS))
    if unknown:
        raise ValueError(f"the chat changes {', '.join(LIMITS)}, not {', '.join(unknown)}")
    values = dict(changes)
    if "max_rounds" in values:
        values["max_rounds"] = int(values["max_rounds"])
    if values.get("max_cost") in ("", None):
        values["max_cost"] = None
    elif "max_cost" in values:
        values["max_cost"] = float(values["max_cost"])
    agent.settings = agent.settings.replace(**values)


def totals_of(conversation: Conversation) -> dict[str, Any]:
    """The conversation's tokens and cost so far (``"unknown"`` when a price is not)."""
    tokens, cost, priced = 0, 0.0, True
    for message in conversation.messages:
        if message.role != "assistant" or message.usage is None:
            continue
        tokens += message.usage.total_tokens
        if message.usage.cost is None:
            priced = priced and message.usage.total_tokens == 0
        else:
            cost += message.usage.cost
    return {"tokens": tokens, "cost": format_cost(cost if priced else None)}
