"""Prompt interpolation: ``{name}``, ``{In[3]}``, ``{Out[3]}``, ``{_}``, ``{Err}``, ``{fig}``.

:func:`interpolate_prompt` replaces each field with a bounded view of the value
(:func:`nbagent.values.prompt_text`), attaches image values (``{fig}``) to the
prompt instead of writing them out, and says what it shortened, so the surface
can show the user what the model was actually sent.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..images import Image, is_image_like, to_image
from ..values import PROMPT_CHARS, PROMPT_ROWS, frame_shape, is_frame, prompt_text

__all__ = ["FIELD", "Interpolated", "PromptError", "interpolate_prompt"]

FIELD = re.compile(
    r"\{\{|\}\}"
    r"|\{(?P<hist>In|Out)\[(?P<index>-?\d+)\]\}"
    r"|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\}"
)


class PromptError(ValueError):
    """A field names nothing that exists; the message says which and why."""


@dataclass
class Interpolated:
    """The prompt text, the images it attaches, and notes on what was shortened."""

    text: str
    images: list[Image] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str | None:
        """One line for the panel: what was sent in place of the named values."""
        if not self.notes:
            return None
        return "Sent to the model: " + "; ".join(self.notes) + "."


def _history_value(kind: str, index: int, namespace: dict[str, Any]) -> Any:
    history = namespace.get(kind)
    if kind == "In":
        if not isinstance(history, list) or not -len(history) <= index < len(history):
            raise PromptError(f"{{In[{index}]}} in the prompt: there is no input {index}.")
        return history[index]
    if not isinstance(history, dict) or index not in history:
        raise PromptError(
            f"{{Out[{index}]}} in the prompt: cell {index} left no output value "
            "(Out holds only cells whose last line was an expression)."
        )
    return history[index]


def _shortened(label: str, value: Any, text: str) -> str | None:
    if is_frame(value):
        kind, rows, cols = frame_shape(value)
        if rows > PROMPT_ROWS:
            return f"{label} as the first {PROMPT_ROWS} of {rows} rows ({kind}, {cols} columns)"
        return None
    full = value if isinstance(value, str) else None
    if full is not None and len(full) > PROMPT_CHARS:
        return f"{label} as {len(text):,} of {len(full):,} characters (middle cut)"
    if full is None and len(text) >= PROMPT_CHARS and "characters cut" in text:
        return f"{label} as {len(text):,} characters of its repr (middle cut)"
    return None


def interpolate_prompt(
    text: str,
    namespace: dict[str, Any],
    *,
    last_error: Callable[[], str] | None = None,
) -> Interpolated:
    """Replace the fields of ``text`` from ``namespace`` (``{{``/``}}`` are literal braces).

    Braces around anything that is not a field (JSON, set literals) are left alone.
    ``{Err}`` is the kernel's last error (unless ``Err`` is a variable). Raises
    :class:`PromptError` for a name that is not defined.
    """
    result = Interpolated("")

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        if match.group("hist"):
            label = f"{match.group('hist')}[{match.group('index')}]"
            value = _history_value(match.group("hist"), int(match.group("index")), namespace)
        else:
            label = match.group("name")
            head, *attrs = label.split(".")
            if head == "Err" and head not in namespace and last_error is not None:
                return last_error()
            if head not in namespace:
                raise PromptError(
                    f"{{{label}}} in the prompt: {head!r} is not defined in the notebook "
                    "(write {{ and }} for literal braces)."
                )
            value = namespace[head]
            for attr in attrs:
                try:
                    value = getattr(value, attr)
                except AttributeError:
                    raise PromptError(
                        f"{{{label}}} in the prompt: no attribute {attr!r}."
                    ) from None
        if is_image_like(value):  # a figure, PIL image, IPython Image, PNG/JPEG bytes
            try:
                image = to_image(value)
            except (TypeError, ValueError) as exc:
                raise PromptError(f"{{{label}}} in the prompt: {exc}") from None
            result.images.append(image)
            result.notes.append(f"{label} as a {image.describe()} image")
            return f"[image {len(result.images)}: {label}, {image.describe()}, attached]"
        shown = prompt_text(value)
        note = _shortened(label, value, shown)
        if note:
            result.notes.append(note)
        return shown

    result.text = FIELD.sub(replace, text)
    return result
