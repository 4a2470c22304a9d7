"""Events and rounds -> HTML, Markdown and plain text.

No IPython here: the ``%%agent`` magic and the ``ChatWidget`` both use these
functions, and so does ``RunResult``'s display (:func:`result_mime_bundle`).

Security rule: every string a model or a tool produced goes through
:func:`html.escape` (or the Markdown renderer with raw HTML off and unsafe link
schemes refused) before it becomes HTML. Only markup written in this module is
emitted unescaped.

Public API (stable; the widget builds on it):

- :func:`render_result_html`, :func:`render_result_markdown`, :func:`render_result_text`
- :func:`render_round_html` (one ``<details>`` panel), :func:`render_markdown`
- :func:`render_value_html` (a tool's return value as a table / JSON / text / image)
- :class:`Transcript`: feed it events, read ``html()`` / ``markdown()`` / ``text()``
- :func:`mime_bundle` for ``display(..., raw=True)``
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ._render_values import escape as _e
from ._render_values import render_value_html
from .events import (
    Event,
    RoundFinished,
    RunFinished,
    RunStarted,
    Status,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from .markdown_text import code_fence, inline_text
from .messages import ToolCall, ToolResult, ToolRound, Usage

if TYPE_CHECKING:
    from .results import RunResult

__all__ = [
    "CSS",
    "Transcript",
    "mime_bundle",
    "render_markdown",
    "render_result_html",
    "render_result_markdown",
    "render_result_text",
    "render_round_html",
    "render_value_html",
    "result_mime_bundle",
]

ROOT_CLASS = "nbagent-out"

# Scoped under .nbagent-out; --jp-* variables come from JupyterLab / Notebook 7 themes,
# the fallbacks are translucent so they read on both light and dark backgrounds
# (VS Code, nbconvert HTML, GitHub previews that keep the <style>).
CSS = """
.nbagent-out{font-family:var(--jp-ui-font-family,system-ui,sans-serif);
 font-size:var(--jp-content-font-size1,14px);color:var(--jp-content-font-color1,inherit);
 line-height:1.45;max-width:100%}
.nbagent-out .nba-status{color:var(--jp-ui-font-color2,#888);font-style:italic;margin:2px 0 6px}
.nbagent-out .nba-stream{white-space:pre-wrap;margin:4px 0}
.nbagent-out details.nba-round{border:1px solid var(--jp-border-color2,rgba(127,127,127,.35));
 border-radius:4px;margin:4px 0;background:var(--jp-layout-color1,transparent)}
.nbagent-out details.nba-round>summary{cursor:pointer;padding:3px 8px;
 color:var(--jp-ui-font-color1,inherit);background:var(--jp-layout-color2,rgba(127,127,127,.1))}
.nbagent-out details.nba-round.nba-failed{border-color:var(--jp-error-color1,#d32f2f)}
.nbagent-out .nba-body{padding:6px 10px}
.nbagent-out .nba-call{margin:6px 0 10px}
.nbagent-out .nba-call-head{font-family:var(--jp-code-font-family,monospace);font-weight:600}
.nbagent-out pre{font-family:var(--jp-code-font-family,monospace);
 font-size:var(--jp-code-font-size,12px);background:var(--jp-cell-editor-background,
 rgba(127,127,127,.08));color:var(--jp-content-font-color1,inherit);padding:6px 8px;
 border-radius:3px;overflow:auto;max-height:24em;white-space:pre-wrap;margin:4px 0}
.nbagent-out .nba-ok{color:var(--jp-success-color1,#388e3c)}
.nbagent-out .nba-err{color:var(--jp-error-color1,#d32f2f)}
.nbagent-out .nba-error{border-left:3px solid var(--jp-error-color1,#d32f2f);
 background:rgba(211,47,47,.12);padding:4px 8px;margin:4px 0;
 background:color-mix(in srgb,var(--jp-error-color1,#d32f2f) 12%,transparent)}
.nbagent-out .nba-approval{display:inline-block;font-size:85%;padding:0 6px;border-radius:8px;
 border:1px solid var(--jp-border-color1,rgba(127,127,127,.5));margin-left:6px}
.nbagent-out .nba-note{color:var(--jp-ui-font-color2,#888);font-size:85%}
.nbagent-out table.nba-table{border-collapse:collapse;font-size:var(--jp-code-font-size,12px)}
.nbagent-out table.nba-table th,.nbagent-out table.nba-table td{padding:2px 6px;
 border:1px solid var(--jp-border-color2,rgba(127,127,127,.3));text-align:right}
.nbagent-out table.nba-table thead th{background:var(--jp-layout-color2,rgba(127,127,127,.1))}
.nbagent-out img.nba-image{max-width:100%;height:auto}
.nbagent-out .nba-answer{margin-top:6px}
.nbagent-out .nba-footer{color:var(--jp-ui-font-color2,#888);font-size:85%;margin-top:6px;
 border-top:1px solid var(--jp-border-color2,rgba(127,127,127,.25));padding-top:3px}
.nbagent-out .nba-stopped{color:var(--jp-warn-color1,#f57c00);font-weight:600}
"""

_STYLE_TAG = "<style>" + CSS + "</style>"


# --- Markdown ----------------------------------------------------------------------

_SAFE_SCHEMES = ("http:", "https:", "mailto:")
_md: Any = None


def _validate_link(url: str) -> bool:
    """Allow http(s), mailto and scheme-less (relative, #anchor) links only.

    markdown-it already refuses javascript:/vbscript:/file: but accepts some data:
    URLs; we refuse every other scheme (after stripping the whitespace and control
    characters browsers ignore, e.g. ``java\\tscript:``).
    """
    cleaned = "".join(ch for ch in url if ch > " ").lower()
    head = cleaned.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    if ":" not in head:
        return True
    return cleaned.startswith(_SAFE_SCHEMES)


def _markdown() -> Any:
    global _md
    if _md is None:
        from markdown_it import MarkdownIt

        md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
        md.enable(["table", "strikethrough"])
        md.validateLink = _validate_link  # type: ignore[method-assign]

        def link_open(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
            # A click must not navigate the notebook page away, nor hand it an opener.
            tokens[idx].attrSet("target", "_blank")
            tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
            return str(renderer.renderToken(tokens, idx, options, env))

        md.add_render_rule("link_open", link_open)
        _md = md
    return _md


def render_markdown(text: str) -> str:
    """Markdown -> HTML with raw HTML shown as text and unsafe links left as plain text."""
    return str(_markdown().render(text or ""))


# --- one round -----------------------------------------------------------------------


def _pretty_arguments(call: ToolCall) -> str:
    if not call.arguments and call.raw_arguments:
        return call.raw_arguments
    return json.dumps(call.arguments, indent=2, ensure_ascii=False, default=str)


def call_signature(call: ToolCall, limit: int = 80) -> str:
    """``get_weather(city="Oslo")``, with the arguments cut to ``limit`` characters."""
    args = ", ".join(
        f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in call.arguments.items()
    )
    if len(args) > limit:
        args = args[: limit - 3] + "…"
    return f"{call.name}({args})"


def _duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {seconds % 60:.0f} s"


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
        parts.append(f'<div class="nba-error"><strong>Error:</strong> {_e(result.error or "")}')
        if result.traceback:
            parts.append(
                f"<details><summary>Traceback</summary><pre>{_e(result.traceback)}</pre></details>"
            )
        parts.append("</div>")
    return "".join(parts)


def _approval_badge(result: ToolResult | None) -> str:
    if result is None or not result.approval:
        return ""
    cls = "nba-ok" if result.approval.startswith("approved") else "nba-err"
    return f' <span class="nba-approval {cls}">{_e(result.approval)}</span>'


def _call_html(call: ToolCall, result: ToolResult | None, *, max_rows: int) -> str:
    if result is None:
        mark = '<span class="nba-note">running…</span>'
        body = ""
    else:
        mark = (
            '<span class="nba-ok">ok</span>' if result.ok else '<span class="nba-err">error</span>'
        )
        mark += f' <span class="nba-note">{_duration(result.duration_s)}</span>'
        body = '<div class="nba-note">result</div>' + render_result_body_html(
            result, max_rows=max_rows
        )
    return (
        '<div class="nba-call">'
        f'<div class="nba-call-head">{_e(call.name)} {mark}{_approval_badge(result)}</div>'
        f'<div class="nba-note">arguments</div><pre>{_e(_pretty_arguments(call))}</pre>'
        f"{body}"
        "</div>"
    )


def _round_state(tool_round: ToolRound) -> str:
    failed = sum(not r.ok for r in tool_round.results)
    if len(tool_round.results) < len(tool_round.calls):
        return "running"
    if failed:
        return f"{failed} error" + ("s" if failed > 1 else "")
    return "ok"


def _summary_fields(tool_round: ToolRound, index: int) -> list[str]:
    """Round number, tool names, state and (once every call finished) the duration."""
    names = ", ".join(dict.fromkeys(c.name for c in tool_round.calls)) or "no calls"
    state = _round_state(tool_round)
    fields = [f"Round {index + 1}", names, state]
    if state != "running":
        fields.append(_duration(tool_round.duration_s))
    return fields


def round_summary(tool_round: ToolRound, index: int) -> str:
    """``Round 1 · get_weather, lookup · ok · 120 ms`` (plain text, unescaped)."""
    return " · ".join(_summary_fields(tool_round, index))


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
    fields = [_e(field) for field in _summary_fields(tool_round, index)]
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


# --- a whole result --------------------------------------------------------------------


def _footer_text(
    model: str, rounds: int, usage: Usage, elapsed_s: float, stop_reason: str | None
) -> str:
    parts = [
        model,
        f"{rounds} round" + ("" if rounds == 1 else "s"),
        f"{usage.total_tokens:,} tokens ({usage.input_tokens:,} in, {usage.output_tokens:,} out)",
        _duration(elapsed_s),
    ]
    if stop_reason and stop_reason != "complete":
        parts.append(f"stopped: {stop_reason.replace('_', ' ')}")
    return " · ".join(parts)


def _wrap(inner: str) -> str:
    return f'{_STYLE_TAG}<div class="{ROOT_CLASS}">{inner}</div>'


def render_result_html(
    result: RunResult, *, max_rows: int = 10, cache: dict[str, str] | None = None
) -> str:
    """The final, static HTML of a run: round panels, the answer, a footer."""
    parts = [
        render_round_html(r, i, max_rows=max_rows, cache=cache) for i, r in enumerate(result.rounds)
    ]
    parts.append(f'<div class="nba-answer">{render_markdown(result.output)}</div>')
    footer = _e(
        _footer_text(
            result.model, len(result.rounds), result.usage, result.elapsed_s, result.stop_reason
        )
    )
    if result.stop_reason != "complete":
        footer = footer.replace("stopped:", '<span class="nba-stopped">stopped:</span>', 1)
    parts.append(f'<div class="nba-footer">{footer}</div>')
    return _wrap("".join(parts))


def _call_status(result: ToolResult | None) -> str:
    return "running" if result is None else ("ok" if result.ok else "error")


def _round_markdown(tool_round: ToolRound, index: int) -> list[str]:
    lines = [f"**{inline_text(round_summary(tool_round, index))}**", ""]
    if tool_round.assistant_text:
        lines += [inline_text(tool_round.assistant_text), ""]
    by_id = {r.call_id: r for r in tool_round.results}
    for call in tool_round.calls:
        result = by_id.get(call.id)
        status = _call_status(result)
        approval = f" ({inline_text(result.approval)})" if result and result.approval else ""
        lines.append(f"- **{inline_text(call.name)}** → {status}{approval}")
        lines += ["", *code_fence(_pretty_arguments(call), "json")]
        if result is not None:
            lines += code_fence(result.content if result.ok else (result.error or result.content))
        lines.append("")
    return lines


def render_result_markdown(result: RunResult) -> str:
    """A Markdown twin of :func:`render_result_html` (nbconvert to Markdown, chat logs)."""
    lines: list[str] = []
    for i, r in enumerate(result.rounds):
        lines += _round_markdown(r, i)
    lines += [inline_text(result.output), ""]
    footer = _footer_text(
        result.model, len(result.rounds), result.usage, result.elapsed_s, result.stop_reason
    )
    lines.append(f"*{inline_text(footer)}*")
    return "\n".join(lines)


def _round_text(tool_round: ToolRound, index: int) -> list[str]:
    lines = [f"▸ {round_summary(tool_round, index)}"]
    by_id = {r.call_id: r for r in tool_round.results}
    for call in tool_round.calls:
        result = by_id.get(call.id)
        status = _call_status(result)
        approval = f" [{result.approval}]" if result and result.approval else ""
        lines.append(f"    {call_signature(call)} -> {status}{approval}")
    return lines


def render_result_text(result: RunResult) -> str:
    """A plain-text twin for terminals: one line per round and call, the answer, a footer."""
    lines: list[str] = []
    for i, r in enumerate(result.rounds):
        lines += _round_text(r, i)
    if lines:
        lines.append("")
    lines.append(result.output)
    footer = _footer_text(
        result.model, len(result.rounds), result.usage, result.elapsed_s, result.stop_reason
    )
    lines += ["", f"— {footer}"]
    return _terminal_safe("\n".join(lines))


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _terminal_safe(text: str) -> str:
    """Model text must not drive the terminal: escape sequences become visible marks."""
    return _CONTROL.sub("\ufffd", text)


def mime_bundle(html_text: str, markdown_text: str, plain_text: str) -> dict[str, str]:
    """A display bundle with the HTML and its two twins."""
    return {"text/html": html_text, "text/markdown": markdown_text, "text/plain": plain_text}


def result_mime_bundle(result: RunResult) -> dict[str, str]:
    """The final rendering of a run as a display bundle (``RunResult``'s rendering hook)."""
    return mime_bundle(
        render_result_html(result), render_result_markdown(result), render_result_text(result)
    )


# --- live transcript --------------------------------------------------------------------


class Transcript:
    """The live view of one run, built from its events.

    Feed every event to :meth:`feed`; read :meth:`html`, :meth:`markdown` or
    :meth:`text` whenever you want to redraw (finished round panels are rendered
    once and cached, so redrawing costs about the size of the streaming text).
    Once ``RunFinished`` arrives, the views are the static final rendering.
    """

    def __init__(self, *, max_rows: int = 10) -> None:
        self.max_rows = max_rows
        self.status = ""
        self.prompt: str | None = None
        self.model: str | None = None
        self.text_parts: list[str] = []
        """Text streamed in the current request (reset when a round finishes)."""
        self.rounds: list[ToolRound] = []
        self.calls: list[ToolCall] = []
        """Calls of the round in progress (started, maybe not finished)."""
        self.results: dict[str, ToolResult] = {}
        self.result: RunResult | None = None
        self.interrupted = False
        self._round_html: list[str] = []
        self._calls_html: dict[str, str] = {}
        """Rendered finished calls by call id (each rendered once, reused by every redraw)."""

    # -- input ---------------------------------------------------------------------

    def feed(self, event: Event) -> bool:
        """Take one event; True when the visible output changed."""
        if isinstance(event, TextDelta):
            self.text_parts.append(event.text)
            return bool(event.text)
        if isinstance(event, Status):
            changed = event.text != self.status
            self.status = event.text
            return changed
        if isinstance(event, ToolCallStarted):
            self.calls.append(event.call)
        elif isinstance(event, ToolCallFinished):
            self.results[event.result.call_id] = event.result
        elif isinstance(event, RoundFinished):
            self.rounds.append(event.round)
            self._round_html.append(
                render_round_html(
                    event.round, event.round_index, max_rows=self.max_rows, cache=self._calls_html
                )
            )
            self.text_parts, self.calls, self.results = [], [], {}
        elif isinstance(event, RunStarted):
            self.prompt, self.model = event.prompt, event.model
        elif isinstance(event, RunFinished):
            self.result = event.result
        return True

    def feed_all(self, events: Iterable[Event]) -> Transcript:
        for event in events:
            self.feed(event)
        return self

    def mark_interrupted(self) -> None:
        """The run was interrupted (kernel interrupt, Stop): say so even without RunFinished."""
        self.interrupted = True
        if self.result is None:
            self.status = "Cancelled"

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    @property
    def done(self) -> bool:
        return self.result is not None

    # -- output --------------------------------------------------------------------

    def _pending_round(self) -> ToolRound | None:
        if not self.calls:
            return None
        results = [self.results[c.id] for c in self.calls if c.id in self.results]
        return ToolRound(self.text or None, list(self.calls), results)

    def html(self) -> str:
        if self.result is not None:
            return render_result_html(self.result, max_rows=self.max_rows, cache=self._calls_html)
        parts: list[str] = []
        if self.status:
            cls = "nba-status nba-stopped" if self.interrupted else "nba-status"
            parts.append(f'<div class="{cls}">{_e(self.status)}</div>')
        parts += self._round_html
        pending = self._pending_round()
        if pending is not None:
            parts.append(
                render_round_html(
                    pending,
                    len(self.rounds),
                    max_rows=self.max_rows,
                    open=True,
                    cache=self._calls_html,
                )
            )
        elif self.text_parts:
            parts.append(f'<div class="nba-stream">{_e(self.text)}</div>')
        return _wrap("".join(parts))

    def markdown(self) -> str:
        if self.result is not None:
            return render_result_markdown(self.result)
        lines = [f"*{inline_text(self.status)}*", ""] if self.status else []
        for i, r in enumerate(self.rounds):
            lines += _round_markdown(r, i)
        pending = self._pending_round()
        if pending is not None:
            lines += _round_markdown(pending, len(self.rounds))
        elif self.text_parts:
            lines.append(inline_text(self.text))
        return "\n".join(lines)

    def plain(self) -> str:
        """Plain-text view (named ``plain`` because ``text`` is the streamed text)."""
        if self.result is not None:
            return render_result_text(self.result)
        lines = [self.status] if self.status else []
        for i, r in enumerate(self.rounds):
            lines += _round_text(r, i)
        pending = self._pending_round()
        if pending is not None:
            lines += _round_text(pending, len(self.rounds))
        elif self.text_parts:
            lines.append(self.text)
        return _terminal_safe("\n".join(lines))

    def bundle(self) -> dict[str, str]:
        """The current mime bundle (HTML + Markdown + plain text)."""
        return mime_bundle(self.html(), self.markdown(), self.plain())
