"""RunResult: what a run produced, and the one hook that renders it.

A run value beside :mod:`nbagent.messages`: it imports nothing above them. How a
result looks in a notebook (HTML panels, the Markdown and plain-text twins)
belongs to :mod:`nbagent.render`, which sits higher; the two meet in one
documented hook, :func:`set_renderer`. ``nbagent.agent`` installs the renderer
(a function that imports ``nbagent.render`` on first use), so every result
displays richly while ``import nbagent`` stays light and no module imports upwards.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .messages import Message, ToolRound, Usage
from .run.stops import STOPS, Stop, StopReason, stop_reason_words

__all__ = [
    "STOPS",
    "RunResult",
    "Stop",
    "StopReason",
    "set_renderer",
    "stop_reason_words",
    "to_frame",
]

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


@dataclass
class RunResult:
    """What a run produced."""

    output: Any
    """The final answer text (or what was gathered when the run stopped early); with
    ``output_type`` the validated value (None when the answer never validated)."""
    rounds: list[ToolRound]
    stop_reason: StopReason
    """Why the run ended: one of the rows of :data:`nbagent.run.stops.STOPS`."""
    usage: Usage
    """Totals of this run; each round carries its own ``usage`` too."""
    model: str
    conversation_id: str
    elapsed_s: float = 0.0
    message: Message | None = field(default=None, repr=False)
    notes: list[str] = field(default_factory=list)
    """Short facts for the footer: "context 2,100/128,000 tokens (2%)", "this model does
    not support tools; answered without them"."""
    text: str = None  # type: ignore[assignment]  # set from output when not given
    """The model's final text as it wrote it (the raw JSON of a typed answer)."""
    output_type: Any = field(default=None, repr=False)
    """The ``output_type`` of the run (None: the output is the text)."""

    def __post_init__(self) -> None:
        if self.text is None:
            self.text = self.output if isinstance(self.output, str) else ""

    def to_frame(self) -> Any:
        """The typed output as a pandas DataFrame: one row per record (a single record: one row)."""
        return to_frame(self.output, self.output_type)

    @property
    def tool_results(self) -> list[Any]:
        """The Python values the tools returned, in call order (DataFrames stay DataFrames)."""
        return [r.value for rnd in self.rounds for r in rnd.results if r.ok]

    def __repr__(self) -> str:
        # Short on purpose: the dataclass default would dump every round, call and value.
        output: Any = self.output
        if isinstance(output, str) and len(output) > 80:
            output = output[:79] + "…"
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


def to_frame(value: Any, output_type: Any = None) -> Any:
    """A pandas DataFrame: a list of records is one row each, a single record one row."""
    import pandas as pd

    if output_type is not None:
        import pydantic

        data = pydantic.TypeAdapter(output_type).dump_python(value, mode="python")
    else:
        data = _plain(value)
    if isinstance(data, dict):
        return pd.DataFrame([data])
    if isinstance(data, (list, tuple)):
        if all(isinstance(item, dict) for item in data):
            return pd.DataFrame(list(data))
        return pd.DataFrame({"value": list(data)})
    return pd.DataFrame({"value": [data]})


def _plain(value: Any) -> Any:
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    dump = getattr(value, "model_dump", None)
    return dump() if callable(dump) else value
