"""What the magics share: one-line usage errors, quoted options, prompt fields, display."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from .._internal.safe_text import clean
from ..errors import did_you_mean
from ..kernel.prompt import Interpolated, PromptError, interpolate_prompt

__all__ = [
    "display_bundle",
    "interpolate",
    "interpolate_fields",
    "unquote",
    "usage_error",
    "with_option_hint",
]


def usage_error(message: object) -> UsageError:
    """IPython's own UsageError (printed as one line), its text terminal-safe.

    IPython shows its one-line form only for that exact class (``etype is UsageError``):
    a subclass gets a full traceback, hence a function rather than a subclass. The text
    may quote a server or a model, so its control characters are neutralised.
    """
    return UsageError(clean(str(message)))


def interpolate(text: str, namespace: dict[str, Any]) -> str:
    """Replace ``{name}`` (or ``{name.attr}``) from ``namespace``; ``{{``/``}}`` are literal.

    Also ``{In[3]}``, ``{Out[3]}``, ``{_}`` and ``{Err}`` (see :func:`interpolate_fields`).
    Braces around anything that is not a name (JSON, set literals) are left alone.
    """
    return interpolate_fields(text, namespace).text


def interpolate_fields(text: str, namespace: dict[str, Any]) -> Interpolated:
    """The prompt with its fields replaced, the images it attaches and what was shortened."""
    from ..kernel import current_view
    from ..kernel.errors import last_error_text

    try:
        return interpolate_prompt(
            text, namespace, last_error=lambda: last_error_text(current_view())
        )
    except PromptError as exc:
        raise usage_error(str(exc)) from None


def unquote(value: str | None) -> str | None:
    """IPython's argument splitter keeps the quotes around ``--system "Be brief."``."""
    if value is not None and len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def with_option_hint(message: str, parser: Any) -> str:
    """Argparse's "unrecognized arguments: --kernal", plus the option it was meant to be."""
    marker = "unrecognized arguments:"
    if marker not in message:
        return message
    options = list(parser._option_string_actions)  # argparse keeps no public list
    hints = [
        did_you_mean(word.split("=", 1)[0], options)
        for word in message.split(marker, 1)[1].split()
        if word.startswith("-")
    ]
    return message + ("." + "".join(hints) if any(hints) else "")


def display_bundle(bundle: dict[str, str]) -> Any:
    """Show a MIME bundle as it is (raw), with a display id to update it in place."""
    from IPython.core.display_functions import display

    return display(bundle, raw=True, display_id=True)
