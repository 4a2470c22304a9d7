"""Prompt interpolation: ``{name}``, ``{In[3]}``, ``{Out[3]}``, ``{_}``, ``{Err}``, ``{fig}``.

:func:`interpolate_prompt` replaces each field with a bounded view of the value
(:func:`nbagent._internal.values.prompt_text`), attaches image values (``{fig}``) to the
prompt instead of writing them out, and says what it shortened, so the surface
can show the user what the model was actually sent.

Describing a value runs the user's code (``__repr__``, properties, DataFrame
formatting), so it runs on a worker thread and the cell waits at most
:data:`PROMPT_SECONDS` for all the fields together: a value that cannot be
described in time becomes a short placeholder, and the notes say so.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._internal.images import Image, is_image_like, to_image
from .._internal.threads import TIMED_OUT, wait_bounded
from .._internal.values import PROMPT_CHARS, PROMPT_ROWS, frame_shape, is_frame, prompt_text

__all__ = ["FIELD", "PROMPT_SECONDS", "Interpolated", "PromptError", "interpolate_prompt"]

PROMPT_SECONDS = 5.0
"""How long a prompt's fields may take to describe, all together (each gets at least
:data:`FIELD_SECONDS`); a value not described in time is sent as a placeholder."""
FIELD_SECONDS = 0.25

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


def _type_name(value: Any) -> str:
    try:
        return str(type(value).__name__)
    except Exception:  # noqa: BLE001 - a hostile metaclass
        return "object"


def _attributes(value: Any, label: str, attrs: list[str]) -> Any:
    for attr in attrs:
        try:
            value = getattr(value, attr)
        except AttributeError:
            raise PromptError(f"{{{label}}} in the prompt: no attribute {attr!r}.") from None
    return value


def _describe(label: str, value: Any) -> tuple[str, str | None]:
    shown = prompt_text(value)
    return shown, _shortened(label, value, shown)


def interpolate_prompt(
    text: str,
    namespace: dict[str, Any],
    *,
    last_error: Callable[[], str] | None = None,
    seconds: float = PROMPT_SECONDS,
) -> Interpolated:
    """Replace the fields of ``text`` from ``namespace`` (``{{``/``}}`` are literal braces).

    Braces around anything that is not a field (JSON, set literals) are left alone.
    ``{Err}`` is the kernel's last error (unless ``Err`` is a variable). Raises
    :class:`PromptError` for a name that is not defined. Values are described on a
    worker thread within ``seconds`` in all (see :data:`PROMPT_SECONDS`).
    """
    result = Interpolated("")
    deadline = time.monotonic() + seconds

    def within(fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` off this thread, or TIMED_OUT when the prompt's time is spent."""
        return wait_bounded(fn, *args, seconds=max(deadline - time.monotonic(), FIELD_SECONDS))

    def slow(label: str, kind: str, what: str) -> str:
        limit = f"{seconds:g} s"
        result.notes.append(f"{label} as a placeholder ({what} did not finish within {limit})")
        return f"<{kind}: not described, {what} took over {limit}>"

    def failed(label: str, kind: str, error: Exception) -> str:
        # Only the type's name: str() of the user's exception is user code too.
        raised = _type_name(error.__cause__ or error)
        result.notes.append(f"{label} as a placeholder (describing it raised {raised})")
        return f"<{kind}: not described ({raised})>"

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
                try:
                    error_text = within(last_error)
                except Exception as exc:  # noqa: BLE001 - the placeholder says what was raised
                    return failed("Err", "the last error", exc)
                if error_text is TIMED_OUT:
                    return slow("Err", "the last error", "describing it")
                return str(error_text)
            if head not in namespace:
                raise PromptError(
                    f"{{{label}}} in the prompt: {head!r} is not defined in the notebook "
                    "(write {{ and }} for literal braces)."
                )
            value = namespace[head]
            if attrs:  # properties are user code too
                try:
                    got = within(_attributes, value, label, attrs)
                except PromptError:
                    raise
                except Exception as exc:  # noqa: BLE001 - a property raising
                    return failed(label, _type_name(value), exc)
                if got is TIMED_OUT:
                    return slow(label, _type_name(value), "reading its attributes")
                value = got
        if is_image_like(value):  # a figure, PIL image, IPython Image, PNG/JPEG bytes
            try:
                image = to_image(value)
            except (TypeError, ValueError) as exc:
                raise PromptError(f"{{{label}}} in the prompt: {exc}") from None
            result.images.append(image)
            result.notes.append(f"{label} as a {image.describe()} image")
            return f"[image {len(result.images)}: {label}, {image.describe()}, attached]"
        try:
            described = within(_describe, label, value)
        except Exception as exc:  # noqa: BLE001 - e.g. a DataFrame subclass that cannot print
            return failed(label, _type_name(value), exc)
        if described is TIMED_OUT:
            return slow(label, _type_name(value), "its repr")
        shown, note = described
        if note:
            result.notes.append(note)
        return str(shown)

    result.text = FIELD.sub(replace, text)
    return result
