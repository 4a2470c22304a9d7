"""HTML: one ``<details>`` panel per tool round, and a whole run (panels, answer, footer).

Panels are collapsed by default (the one being filled live is open); each call
shows its arguments, then its result (a table, JSON, text or image) or its error
with a collapsible traceback, and the approval decision when there was one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..messages import ToolCall, ToolResult, ToolRound
from .arguments import arguments_text
from .css import wrap
from .escaping import escape
from .markdown_html import render_markdown
from .summary import duration_text, footer_text, summary_fields, typed_text
from .values import render_value_html

if TYPE_CHECKING:
    from ..results import RunResult

__all__ = [
    "progress_html",
    "render_result_body_html",
    "render_result_html",
    "THINKING_CHARS",
    "render_round_html",
    "thinking_html",
]


def render_result_body_html(result: ToolResult, *, max_rows: int = 10) -> str:
    """The body of one result: the value (or the model-visible text), or the error."""
    parts: list[str] = []
    if result.ok:
        parts.append(render_value_html(result.value, result.content, max_rows=max_rows))
        if result.truncated:
            parts.append(
                '<div class="nba-note">The model saw a shortened version of this result.</div>'
            )
    else:
        parts.append(f'<div class="nba-error"><strong>Error:</strong> {escape(result.error or "")}')
        if result.traceback:
            parts.append(
                "<details><summary>Traceback</summary>"
                f"<pre>{escape(result.traceback)}</pre></details>"
            )
        parts.append("</div>")
    return "".join(parts)


THINKING_CHARS = 20_000
"""Characters of a turn's thinking a panel shows (the rest stays in the result and history)."""


def thinking_html(provider_data: dict[str, Any] | None, *, kept_in: str = "") -> str:
    """A turn's thinking, collapsed, at most :data:`THINKING_CHARS` characters of it.

    A ``<think>`` block moved out of the answer, or the reasoning an API returned with
    its calls (Ollama, OpenAI-compatible, Anthropic). Longer thinking is cut like a
    long tool result; the note says where all of it is: ``kept_in`` (the attribute of
    the run's result holding it) and the history, which stores it whole.
    """
    data = provider_data or {}
    thinking = data.get("thinking") or data.get("ollama_thinking")
    if not thinking and isinstance(data.get("openai_reasoning"), dict):
        thinking = "\n".join(str(v) for v in data["openai_reasoning"].values())
    if not thinking and isinstance(data.get("anthropic_thinking"), list):
        blocks = data["anthropic_thinking"]
        thinking = "\n".join(str(b.get("thinking", "")) for b in blocks if isinstance(b, dict))
    if not isinstance(thinking, str) or not thinking.strip():
        return ""
    size = len(thinking)
    summary = "Thinking"
    note = ""
    if size > THINKING_CHARS:
        thinking = thinking[:THINKING_CHARS]
        summary = f"Thinking ({size:,} characters; the first {THINKING_CHARS:,} shown)"
        where = f"the run's result ({kept_in}) and " if kept_in else ""
        note = (
            f'<div class="nba-note">[… {size - THINKING_CHARS:,} more characters not shown; '
            f"all of it is kept in {escape(where)}the history (Agent.resume(id).conversation)"
            "]</div>"
        )
    return (
        f'<details class="nba-thinking"><summary>{summary}</summary>'
        f"<pre>{escape(thinking)}</pre>{note}</details>"
    )


def progress_html(lines: list[str]) -> str:
    """The progress lines of a running call (newest last)."""
    if not lines:
        return ""
    items = "".join(f"<li>{escape(line)}</li>" for line in lines)
    return f'<ul class="nba-progress">{items}</ul>'


def _approval_badge(result: ToolResult | None) -> str:
    if result is None or not result.approval:
        return ""
    cls = "nba-ok" if result.approval.startswith("approved") else "nba-err"
    return f' <span class="nba-approval {cls}">{escape(result.approval)}</span>'


def _call_html(call: ToolCall, result: ToolResult | None, *, max_rows: int) -> str:
    if result is None:
        mark = '<span class="nba-note">running…</span>'
        body = ""
    else:
        mark = (
            '<span class="nba-ok">ok</span>' if result.ok else '<span class="nba-err">error</span>'
        )
        mark += f' <span class="nba-note">{duration_text(result.duration_s)}</span>'
        body = '<div class="nba-note">result</div>' + render_result_body_html(
            result, max_rows=max_rows
        )
    return (
        '<div class="nba-call">'
        f'<div class="nba-call-head">{escape(call.name)} {mark}{_approval_badge(result)}</div>'
        f'<div class="nba-note">arguments</div><pre>{escape(arguments_text(call))}</pre>'
        f"{body}"
        "</div>"
    )


def render_round_html(
    tool_round: ToolRound,
    index: int,
    *,
    max_rows: int = 10,
    open: bool = False,
    cache: dict[str, str] | None = None,
) -> str:
    """One round as a ``<details>`` panel (collapsed unless ``open``); ``index`` is 0-based.

    ``cache`` ("round:call id" -> HTML) lets a live view render each finished call once:
    a figure is encoded to PNG once, not at every redraw.
    """
    failed = any(not r.ok for r in tool_round.results)
    by_id = {r.call_id: r for r in tool_round.results}
    fields = [escape(field) for field in summary_fields(tool_round, index)]
    if failed:
        fields[2] = f'<span class="nba-err">{fields[2]}</span>'
    summary = " · ".join(fields)
    parts = [
        f'<details class="nba-round{" nba-failed" if failed else ""}"{" open" if open else ""}>',
        f"<summary>{summary}</summary>",
        '<div class="nba-body">',
    ]
    if tool_round.assistant_text:
        text_html = render_markdown(tool_round.assistant_text)
        parts.append(f'<div class="nba-pre-text">{text_html}</div>')
    kept_in = f"rounds[{index}].provider_data"
    parts.append(thinking_html(tool_round.provider_data, kept_in=kept_in))
    for call in tool_round.calls:
        result = by_id.get(call.id)
        key = f"{index}:{call.id}"  # some APIs reuse call ids across rounds
        cached = cache.get(key) if cache is not None and result is not None else None
        if cached is None:
            cached = _call_html(call, result, max_rows=max_rows)
            if cache is not None and result is not None:
                cache[key] = cached
        parts.append(cached)
    parts.append("</div></details>")
    return "".join(parts)


def render_result_html(
    result: RunResult, *, max_rows: int = 10, cache: dict[str, str] | None = None
) -> str:
    """The final, static HTML of a run: round panels, the answer, a footer."""
    parts = [
        render_round_html(r, i, max_rows=max_rows, cache=cache) for i, r in enumerate(result.rounds)
    ]
    if result.message is not None:
        parts.append(thinking_html(result.message.provider_data, kept_in="message.provider_data"))
    typed = typed_text(result)
    if typed is None:
        parts.append(f'<div class="nba-answer">{render_markdown(result.text)}</div>')
    else:  # a typed answer: a table of its records, else its JSON
        parts.append(f'<div class="nba-answer">{_typed_html(result, typed, max_rows)}</div>')
    footer = escape(footer_text(result))
    if result.stop_reason != "complete":
        footer = footer.replace("stopped:", '<span class="nba-stopped">stopped:</span>', 1)
    parts.append(f'<div class="nba-footer">{footer}</div>')
    return wrap("".join(parts))


def _typed_html(result: RunResult, typed: str, max_rows: int) -> str:
    try:
        frame = result.to_frame()
    except Exception:  # pandas missing, or values that make no table
        return render_value_html(None, typed, max_rows=max_rows)
    return render_value_html(frame, typed, max_rows=max_rows)
