"""A stored conversation as the chat's turns: what the page draws after a restart.

Each user message and the assistant message after it make one turn, drawn with
the same round panels and answer as a live run (everything escaped by
:mod:`nbagent.render`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..cost import format_cost
from ..errors import ConfigError
from ..messages import Conversation, Message
from ..render import escape, render_markdown, render_round_html
from ..render.css import wrap
from ..render.summary import duration_text, tokens_text
from ..results import stop_reason_words
from ..store import Store, resolve_store
from ..store.chat_rows import ChatRows, UserView, chat_rows, keep_user_view
from .cards import cards_html
from .code_calls import show_code_once
from .mentions import user_html

if TYPE_CHECKING:
    from ..agent import Agent
    from .turn import Turn


def stored_turn(
    view: UserView, reply: Message | None, duration: float | None = None
) -> dict[str, Any]:
    """One turn from history: ``{"prompt", "html"}`` like a live turn's state.

    ``view``: the user message as the chat showed it; ``duration``: the seconds its
    answer's run took, when the history kept them.
    """
    parts = ['<div class="nbagent-turn">', user_html(view.text, view.notes)]
    if reply is not None:
        parts.append(cards_html(reply.rounds or []))
        panels = "".join(render_round_html(r, i) for i, r in enumerate(reply.rounds or []))
        body = [show_code_once(panels, [c for r in reply.rounds or [] for c in r.calls])]
        body.append(f'<div class="nba-answer">{render_markdown(reply.content)}</div>')
        footer = escape(footer_of(reply, duration))
        footer = footer.replace("stopped:", '<span class="nba-stopped">stopped:</span>', 1)
        body.append(f'<div class="nba-footer">{footer}</div>')
        parts.append(wrap("".join(body)))
    parts.append("</div>")
    return {"prompt": view.text, "html": "".join(parts)}


def footer_of(reply: Message, duration: float | None) -> str:
    """The live footer's words (:func:`nbagent.render.footer_text`) from what history keeps.

    The model, rounds, tokens, the price (when it was known: files written before
    schema 9 have none), the run's duration and how it stopped. The run's notes and
    why a model was chosen are not kept.
    """
    rounds = len(reply.rounds or [])
    footer = [reply.model or "", f"{rounds} round" + ("" if rounds == 1 else "s")]
    if reply.usage is not None and reply.usage.total_tokens:
        footer.append(tokens_text(reply.usage))
        if reply.usage.cost is not None:
            footer.append(format_cost(reply.usage.cost))
    if duration is not None:
        footer.append(duration_text(duration))
    note = (reply.provider_data or {}).get("footer_note")  # the embedded model's own words
    if isinstance(note, str) and note:
        footer.append(note)
    if reply.stop_reason and reply.stop_reason not in ("complete", "end_turn", "stop"):
        footer.append(f"stopped: {stop_reason_words(reply.stop_reason)}")
    return " · ".join(f for f in footer if f)


def turns_of(conversation: Conversation, store: Store | None = None) -> list[dict[str, Any]]:
    """Every turn of ``conversation``, oldest first (a user message without a reply too).

    With ``store``, user messages show as they were typed and footers give durations.
    """
    rows = rows_of(store, conversation)
    turns: list[dict[str, Any]] = []
    view: UserView | None = None
    for position, message in enumerate(conversation.messages):
        if message.role == "user":
            if view is not None:
                turns.append(stored_turn(view, None))
            view = rows.views.get(position) or UserView(message.content)
        elif message.role == "assistant":
            duration = rows.durations.get(position)
            turns.append(stored_turn(view or UserView(""), message, duration))
            view = None
    if view is not None:
        turns.append(stored_turn(view, None))
    return turns


def rows_of(store: Store | None, conversation: Conversation) -> ChatRows:
    """What the history keeps for the chat beside ``conversation``'s messages."""
    if store is None or not conversation.messages:
        return ChatRows()  # a new chat reads (and creates) no history file
    try:
        return chat_rows(store, conversation.id)
    except Exception:  # history unavailable: the turns show the text sent, no duration
        return ChatRows()


def keep_typed(store: Store | None, conversation: Conversation, turn: Turn) -> None:
    """Keep how ``turn``'s message was shown, when it differs from the text sent.

    Called once its run ended, so the run's writer has saved the message.
    """
    notes = tuple(turn.notes())
    if store is None or (turn.prompt == turn.sent and not notes):
        return
    messages = conversation.messages
    position = turn.position
    if not (position < len(messages) and messages[position].role == "user"):
        return  # the run never added the message (it failed before starting)
    keep_user_view(store, conversation.id, position, UserView(turn.prompt, notes))


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
