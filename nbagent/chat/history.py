"""A stored conversation as the chat's turns: what the page draws after a restart.

Each user message and the assistant message after it make one turn, drawn with
the same round panels and answer as a live run (everything escaped by
:mod:`nbagent.render`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..messages import Conversation, Message
from ..render import escape, render_markdown, render_round_html
from ..render.css import wrap
from ..render.summary import tokens_text
from ..store import Store, resolve_store
from .cards import cards_html
from .mentions import prompt_html

if TYPE_CHECKING:
    from ..agent import Agent


def user_html(prompt: str) -> str:
    """The user's message, as every turn starts."""
    return (
        '<div class="nbagent-user"><div class="nbagent-user-label">You</div>'
        f"{prompt_html(prompt)}</div>"
    )


def stored_turn(prompt: str, reply: Message | None) -> dict[str, Any]:
    """One turn from history: ``{"prompt", "html"}`` like a live turn's state."""
    parts = ['<div class="nbagent-turn">', user_html(prompt)]
    if reply is not None:
        parts.append(cards_html(reply.rounds or []))
        body = [render_round_html(r, i) for i, r in enumerate(reply.rounds or [])]
        body.append(f'<div class="nba-answer">{render_markdown(reply.content)}</div>')
        # As the live footer has it, from what the history keeps (no duration or price).
        rounds = len(reply.rounds or [])
        footer = [reply.model or "", f"{rounds} round" + ("" if rounds == 1 else "s")]
        if reply.usage is not None and reply.usage.total_tokens:
            footer.append(tokens_text(reply.usage))
        if reply.stop_reason and reply.stop_reason not in ("complete", "end_turn", "stop"):
            footer.append(f"stopped: {reply.stop_reason}")
        body.append(f'<div class="nba-footer">{escape(" · ".join(f for f in footer if f))}</div>')
        parts.append(wrap("".join(body)))
    parts.append("</div>")
    return {"prompt": prompt, "html": "".join(parts)}


def turns_of(conversation: Conversation) -> list[dict[str, Any]]:
    """Every turn of ``conversation``, oldest first (a user message without a reply too)."""
    turns: list[dict[str, Any]] = []
    prompt: str | None = None
    for message in conversation.messages:
        if message.role == "user":
            if prompt is not None:
                turns.append(stored_turn(prompt, None))
            prompt = message.content
        elif message.role == "assistant":
            turns.append(stored_turn(prompt or "", message))
            prompt = None
    if prompt is not None:
        turns.append(stored_turn(prompt, None))
    return turns


def store_of(agent: Agent) -> Store:
    """The agent's history store (a clear error when it has none)."""
    if agent.store is None:
        raise ConfigError("opening a stored conversation needs history (the agent has store=None)")
    return agent.store


def latest_id(options: dict[str, Any]) -> str:
    """The latest stored conversation's id, in the store ``options`` name."""
    store = resolve_store(options.get("store", "default"), options.get("env"))
    if store is None:
        raise ConfigError("resume needs history: store=None or NBAGENT_HISTORY=off")
    return store.resolve_id(None)
