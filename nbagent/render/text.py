"""The plain-text twin of a run (terminals, ``text/plain``), and the terminal filter.

Model and tool text must not drive a terminal: :func:`terminal_safe` turns every
control character (escape sequences, bells, carriage returns) into a visible
replacement mark. Every plain-text output of nbagent goes through it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._internal.redaction import scrub
from .._internal.safe_text import clean
from ..messages import ToolRound
from .arguments import call_signature
from .summary import call_status, footer_text, round_summary, typed_text

if TYPE_CHECKING:
    from ..results import RunResult

__all__ = ["render_result_text", "round_text_lines", "terminal_safe"]


def terminal_safe(text: str) -> str:
    """``text`` with every control character but newline and tab (and bidi controls) as U+FFFD."""
    return clean(text)


def round_text_lines(tool_round: ToolRound, index: int) -> list[str]:
    """``▸ Round 1 · add · ok · 3 ms`` and one indented line per call (not yet filtered)."""
    lines = [f"▸ {round_summary(tool_round, index)}"]
    by_id = {r.call_id: r for r in tool_round.results}
    for call in tool_round.calls:
        result = by_id.get(call.id)
        approval = f" [{result.approval}]" if result and result.approval else ""
        lines.append(f"    {call_signature(call)} -> {call_status(result)}{approval}")
    return lines


def render_result_text(result: RunResult) -> str:
    """A plain-text twin for terminals: one line per round and call, the answer, a footer."""
    lines: list[str] = []
    for i, r in enumerate(result.rounds):
        lines += round_text_lines(r, i)
    if lines:
        lines.append("")
    lines.append(typed_text(result) or result.text)
    lines += ["", f"— {footer_text(result)}"]
    return terminal_safe(scrub("\n".join(lines)))
