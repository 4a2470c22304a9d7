"""What ``%%agent --over df`` does once the magic has parsed its options.

The magic keeps its arguments and errors; this module protects the rows' own
``{column}`` fields from the notebook's ``{name}`` interpolation, runs the batch
and returns what the cell shows at the end.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, MutableMapping
from typing import Any

from .runner import BatchControl, BatchResult
from .summary import summary_bundle

__all__ = ["protect_columns", "run_over"]

_FIELD = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)([^{}]*)\}(?!\})")
"""A ``{name...}`` field, not ``{{escaped}}``."""


def protect_columns(cell: str, columns: Iterable[Any]) -> str:
    """``cell`` with its column fields doubled, kept from the notebook's interpolation.

    ``{subject}`` becomes ``{{subject}}``, which interpolation turns back into
    ``{subject}`` for the rows: a column wins over a notebook variable of its name.
    """
    names = {str(c) for c in columns}
    return _FIELD.sub(lambda m: "{" + m.group(0) + "}" if m.group(1) in names else m.group(0), cell)


def run_over(
    mapper: Callable[..., Any],
    frame: Any,
    prompt: str,
    *,
    into: tuple[MutableMapping[str, Any], str],
    show: Callable[[dict[str, str]], Any],
    **options: Any,
) -> BatchResult | None:
    """Run ``mapper(frame, prompt, ...)`` (an agent's ``map``), bind and summarise the frame.

    Args:
        mapper: the agent's ``map``.
        frame: the rows.
        prompt: the prompt with the notebook's fields filled in.
        into: (namespace, variable name) receiving the result frame.
        show: displays the summary bundle (``text/html`` and ``text/plain``).
        **options: ``map``'s options.

    Returns:
        The batch's result; None when it returned nothing (interrupted before it began).
    """
    control = BatchControl()
    mapper(frame, prompt, control=control, **options)
    result = control.result
    if result is not None:
        namespace, name = into
        namespace[name] = result.frame
        show(summary_bundle(result, name))
    return result
