"""RunResult: what a run produced, and the one hook that renders it.

A run value beside :mod:`nbagent.messages`: it imports nothing above them. How a
result looks in a notebook (HTML panels, the Markdown and plain-text twins)
belongs to :mod:`nbagent.render`, which sits higher; the two meet in one
documented hook, :func:`set_renderer`. ``nbagent.agent`` installs the renderer
(a function that imports ``nbagent.render`` on first use), so every result
displays richly while ``import nbagent`` stays light and no module imports upwards.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .messages import Message, ToolRound, Usage

MimeBundle = dict[str, str]
Renderer = Callable[["RunResult"], MimeBundle]

_renderer: Renderer | None = None


def set_renderer(renderer: Renderer | None) -> None:
    """Install the function that turns a RunResult into a mime bundle.

    The bundle maps ``text/html``, ``text/markdown`` and ``text/plain`` to text;
    Jupyter, IPython and nbconvert pick the richest one they can show.
    """
    global _renderer
    _renderer = renderer


def stop_reason_words(stop_reason: str) -> str:
    """``"max_rounds"`` -> ``"max rounds"``: how every surface names a stop reason."""
    return stop_reason.replace("_", " ")


@dataclass
class RunResult:
    """What a run produced."""

    output: str
    """The final answer text (or what was gathered when the run stopped early)."""
    rounds: list[ToolRound]
    stop_reason: str
    """"complete" | "max_rounds" | "tool_errors" | "timeout" | "cancelled" | "token_budget"."""
    usage: Usage
    """Totals of this run; each round carries its own ``usage`` too."""
    model: str
    conversation_id: str
    elapsed_s: float = 0.0
    message: Message | None = field(default=None, repr=False)
    notes: list[str] = field(default_factory=list)
    """Short facts for the footer: "context 2,100/128,000 tokens (2%)", "this model does
    not support tools; answered without them"."""

    @property
    def tool_results(self) -> list[Any]:
        """The Python values the tools returned, in call order (DataFrames stay DataFrames)."""
        return [r.value for rnd in self.rounds for r in rnd.results if r.ok]

    def __repr__(self) -> str:
        # Short on purpose: the dataclass default would dump every round, call and value.
        output = self.output if len(self.output) <= 80 else self.output[:79] + "…"
        calls = sum(len(r.calls) for r in self.rounds)
        return (
            f"RunResult(output={output!r}, stop_reason={self.stop_reason!r}, "
            f"rounds={len(self.rounds)}, calls={calls}, usage={self.usage!r}, "
            f"model={self.model!r})"
        )

    def mime_bundle(self) -> MimeBundle:
        """HTML, Markdown and plain text of this result (``{}`` if no renderer is installed)."""
        return _renderer(self) if _renderer is not None else {}

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> MimeBundle | None:
        # IPython's display hook; None falls back to _repr_pretty_ / repr.
        return self.mime_bundle() or None

    def _repr_html_(self) -> str | None:
        return self.mime_bundle().get("text/html")

    def _repr_markdown_(self) -> str | None:
        return self.mime_bundle().get("text/markdown")

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # Terminal IPython's text/plain: the same plain-text twin the %%agent cell shows.
        printer.text(self.mime_bundle().get("text/plain") or repr(self))
