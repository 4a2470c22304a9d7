"""Tool cards: one line per call with its live state, a group per round.

Above a turn's round panels (which keep the arguments and the collapsible results),
each call is a card saying where it is: ``waiting`` for approval, ``running`` (with
the seconds so far, which the page keeps counting), ``done`` or ``failed``, with
its duration. The calls of one model request (parallel calls) form a group whose
header gives the round's tokens, cost when known, and duration.

Everything a model or a tool wrote is escaped here (:func:`nbagent.render.escape`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..cost import format_cost
from ..messages import ToolCall, ToolResult, ToolRound
from ..render import escape

_TYPE_NAME = type.__dict__["__name__"]

STATES = ("waiting", "running", "done", "failed")
"""A card's ``data-state``: awaiting approval, running, finished ok, finished with an error."""


def is_table(value: Any) -> bool:
    """Whether ``value`` is a DataFrame (read from its type's own name: no user code runs)."""
    return value is not None and str(_TYPE_NAME.__get__(type(value))) == "DataFrame"


def call_state(result: ToolResult | None, waiting: bool) -> str:
    """The state of a call from its result (None while it runs) and its approval."""
    if result is not None:
        return "done" if result.ok else "failed"
    return "waiting" if waiting else "running"


def card_html(call: ToolCall, result: ToolResult | None, *, waiting: bool, elapsed: float) -> str:
    """One call's card; ``elapsed``: seconds since it started (used while it runs)."""
    state = call_state(result, waiting)
    label = {"waiting": "awaiting approval", "running": "running"}.get(state, state)
    if result is not None:
        timing = f'<span class="nbagent-card-time">{_seconds(result.duration_s)}</span>'
    elif state == "running":
        timing = (
            f'<span class="nbagent-card-time" data-elapsed="{elapsed:.3f}">'
            f"{_seconds(elapsed)}</span>"
        )
    else:
        timing = ""
    detail = ""
    if result is not None and result.ok and is_table(result.value):
        detail = (
            '<button type="button" class="nbagent-button nbagent-card-put" '
            f'data-call-id="{escape(call.id)}" title="Put this DataFrame in a notebook variable">'
            "Put in variable</button>"
        )
    if result is not None and not result.ok:
        why = result.error or result.approval or "error"
        detail = f'<span class="nbagent-card-error">{escape(why.splitlines()[0][:200])}</span>'
    return (
        f'<div class="nbagent-card nbagent-card-{state}" role="listitem" '
        f'data-state="{state}" data-call-id="{escape(call.id)}">'
        f'<span class="nbagent-card-name">{escape(call.name)}</span> '
        f'<span class="nbagent-card-state">{label}</span> {timing}{detail}</div>'
    )


def round_cards_html(
    tool_round: ToolRound,
    index: int,
    *,
    finished: bool,
    waiting: set[str] | frozenset[str] = frozenset(),
    elapsed: Mapping[str, float] | None = None,
) -> str:
    """The cards of one round's calls, as a group with the round's figures."""
    results = {r.call_id: r for r in tool_round.results}
    elapsed = elapsed or {}
    cards = "".join(
        card_html(c, results.get(c.id), waiting=c.id in waiting, elapsed=elapsed.get(c.id, 0.0))
        for c in tool_round.calls
    )
    count = len(tool_round.calls)
    figures = [f"Round {index + 1}", f"{count} call{'s' if count != 1 else ''}"]
    if finished:
        usage = tool_round.usage
        figures.append(f"{usage.total_tokens:,} tokens")
        if usage.cost is not None:
            figures.append(format_cost(usage.cost))
        figures.append(_seconds(tool_round.duration_s))
    header = f'<div class="nbagent-card-round">{escape(" · ".join(figures))}</div>'
    return (
        f'<div class="nbagent-card-group" role="list" aria-label="{escape(figures[0])} tools" '
        f'data-calls="{count}">{header}{cards}</div>'
    )


def cards_html(
    rounds: Sequence[ToolRound],
    pending: ToolRound | None = None,
    *,
    waiting: set[str] | frozenset[str] = frozenset(),
    elapsed: Mapping[str, float] | None = None,
) -> str:
    """Every round's cards: the finished ``rounds``, then the one in progress."""
    parts = [round_cards_html(r, i, finished=True) for i, r in enumerate(rounds) if r.calls]
    if pending is not None and pending.calls:
        parts.append(
            round_cards_html(pending, len(rounds), finished=False, waiting=waiting, elapsed=elapsed)
        )
    if not parts:
        return ""
    return f'<div class="nbagent-cards">{"".join(parts)}</div>'


def _seconds(value: float) -> str:
    return f"{value:.1f} s" if value >= 0.1 else f"{value * 1000:.0f} ms"
