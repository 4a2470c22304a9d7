"""The Markdown twin of a run (nbconvert to Markdown, chat logs, ``text/markdown``).

Everything a model or a tool produced goes into code fences or through
:func:`~nbagent._internal.markdown_text.inline_text`, so the twin stays inert even under a
Markdown renderer that allows raw HTML.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._internal.markdown_text import code_fence, inline_text
from .._internal.redaction import scrub
from ..messages import ToolRound
from .arguments import arguments_text
from .summary import call_status, footer_text, round_summary, typed_text

if TYPE_CHECKING:
    from ..results import RunResult

__all__ = ["render_result_markdown", "round_markdown_lines"]


def round_markdown_lines(tool_round: ToolRound, index: int) -> list[str]:
    """One round: its summary in bold, its text, then each call's arguments and result."""
    lines = [f"**{inline_text(round_summary(tool_round, index))}**", ""]
    if tool_round.assistant_text:
        lines += [inline_text(tool_round.assistant_text), ""]
    by_id = {r.call_id: r for r in tool_round.results}
    for call in tool_round.calls:
        result = by_id.get(call.id)
        approval = f" ({inline_text(result.approval)})" if result and result.approval else ""
        lines.append(f"- **{inline_text(call.name)}** → {call_status(result)}{approval}")
        lines += ["", *code_fence(arguments_text(call), "json")]
        if result is not None:
            lines += code_fence(result.content if result.ok else (result.error or result.content))
        lines.append("")
    return lines


def render_result_markdown(result: RunResult) -> str:
    """A Markdown twin of :func:`~nbagent.render.render_result_html`."""
    lines: list[str] = []
    for i, r in enumerate(result.rounds):
        lines += round_markdown_lines(r, i)
    typed = typed_text(result)
    lines += [*code_fence(typed, "json"), ""] if typed else [inline_text(result.text), ""]
    lines.append(f"*{inline_text(footer_text(result))}*")
    return scrub("\n".join(lines))
