"""The live view of one run: feed it events, read HTML, Markdown or plain text at any time.

Every surface builds its live output from a :class:`Transcript` (the ``%%agent``
cell display, terminal IPython, the ChatWidget), so a run looks the same
everywhere and, once ``RunFinished`` arrives, equals the static final rendering.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .. import events
from .._internal.markdown_text import inline_text
from .._internal.redaction import scrub
from ..messages import ToolCall, ToolResult, ToolRound
from .bundle import mime_bundle
from .css import wrap
from .escaping import escape
from .markdown import render_result_markdown, round_markdown_lines
from .panels import progress_html, render_result_html, render_round_html
from .text import render_result_text, round_text_lines, terminal_safe

if TYPE_CHECKING:
    from ..results import RunResult

__all__ = ["PROGRESS_LINES", "Transcript"]

PROGRESS_LINES = 3
"""Progress lines shown per running call (the newest)."""


class Transcript:
    """The live view of one run, built from its events.

    Feed every event to :meth:`feed`; read :meth:`html`, :meth:`markdown` or
    :meth:`plain` whenever you want to redraw (finished round panels are rendered
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
        self.progress: dict[str, list[str]] = {}
        """The latest progress lines of the running calls, by call id."""

    # -- input ---------------------------------------------------------------------

    def feed(self, event: events.Event) -> bool:
        """Take one event; True when the visible output changed."""
        if isinstance(event, events.TextDelta):
            self.text_parts.append(event.text)
            return bool(event.text)
        if isinstance(event, events.Status):
            changed = event.text != self.status
            self.status = event.text
            return changed
        if isinstance(event, events.ToolCallStarted):
            self.calls.append(event.call)
        elif isinstance(event, events.ToolCallFinished):
            self.results[event.result.call_id] = event.result
            self.progress.pop(event.result.call_id, None)
        elif isinstance(event, events.ToolProgress):
            line = event.text
            if event.fraction is not None:
                line += f" ({event.fraction:.0%})"
            lines = self.progress.setdefault(event.call_id, [])
            lines.append(line)
            del lines[:-PROGRESS_LINES]
        elif isinstance(event, events.RoundFinished):
            self.rounds.append(event.round)
            self._round_html.append(
                render_round_html(
                    event.round, event.round_index, max_rows=self.max_rows, cache=self._calls_html
                )
            )
            self.text_parts, self.calls, self.results = [], [], {}
        elif isinstance(event, events.RunStarted):
            self.prompt, self.model = event.prompt, event.model
        elif isinstance(event, events.RunFinished):
            self.result = event.result
        return True

    def feed_all(self, stream: Iterable[events.Event]) -> Transcript:
        """Feed every event of ``stream``; returns this transcript."""
        for event in stream:
            self.feed(event)
        return self

    def mark_interrupted(self) -> None:
        """The run was interrupted (kernel interrupt, Stop): say so even without RunFinished."""
        self.interrupted = True
        if self.result is None:
            self.status = "Cancelled"

    @property
    def text(self) -> str:
        """The text streamed in the current request."""
        return "".join(self.text_parts)

    @property
    def done(self) -> bool:
        """True once the run reported how it ended (``RunFinished``)."""
        return self.result is not None

    # -- output --------------------------------------------------------------------

    def _pending_round(self) -> ToolRound | None:
        if not self.calls:
            return None
        results = [self.results[c.id] for c in self.calls if c.id in self.results]
        return ToolRound(self.text or None, list(self.calls), results)

    def html(self) -> str:
        """The current view as HTML (the final rendering once the run finished)."""
        if self.result is not None:
            return render_result_html(self.result, max_rows=self.max_rows, cache=self._calls_html)
        parts: list[str] = []
        if self.status:
            cls = "nba-status nba-stopped" if self.interrupted else "nba-status"
            parts.append(f'<div class="{cls}">{escape(self.status)}</div>')
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
            for call in self.calls:
                lines = self.progress.get(call.id)
                if lines:
                    parts.append(progress_html([f"{call.name}: {line}" for line in lines]))
        elif self.text_parts:
            parts.append(f'<div class="nba-stream">{escape(self.text)}</div>')
        return wrap("".join(parts))

    def markdown(self) -> str:
        """The current view as Markdown."""
        if self.result is not None:
            return render_result_markdown(self.result)
        lines = [f"*{inline_text(self.status)}*", ""] if self.status else []
        for i, r in enumerate(self.rounds):
            lines += round_markdown_lines(r, i)
        pending = self._pending_round()
        if pending is not None:
            lines += round_markdown_lines(pending, len(self.rounds))
        elif self.text_parts:
            lines.append(inline_text(self.text))
        return "\n".join(lines)

    def plain(self) -> str:
        """Plain-text view (named ``plain`` because ``text`` is the streamed text)."""
        if self.result is not None:
            return render_result_text(self.result)
        lines = [self.status] if self.status else []
        for i, r in enumerate(self.rounds):
            lines += round_text_lines(r, i)
        pending = self._pending_round()
        if pending is not None:
            lines += round_text_lines(pending, len(self.rounds))
            for call in self.calls:
                lines += [f"  {call.name}: {line}" for line in self.progress.get(call.id, ())]
        elif self.text_parts:
            lines.append(self.text)
        return terminal_safe("\n".join(lines))

    def bundle(self) -> dict[str, str]:
        """The current mime bundle (HTML + Markdown + plain text).

        Never raises: if a value defeats the renderers anyway, a short fallback shows
        the state and the answer, so a live display always reaches its final state.
        """
        try:
            return mime_bundle(self.html(), self.markdown(), self.plain())
        except Exception as error:  # the display must not stay at "running"
            return self._fallback_bundle(error)

    def _fallback_bundle(self, error: Exception) -> dict[str, str]:
        what = f"(the panels could not be drawn: {type(error).__name__})"
        if self.result is not None:
            text = f"{self.result.output}\n\n— {what}"
        else:
            text = f"{self.status or 'Running…'} {what}\n{self.text}"
        plain = terminal_safe(scrub(text))
        return mime_bundle(wrap(f"<pre>{escape(plain)}</pre>"), inline_text(plain), plain)
