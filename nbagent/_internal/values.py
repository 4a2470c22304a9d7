"""Bounded views of Python values: for the model, for prompts and for the history.

One place decides how a value is summarised, so the model's view of a tool's
DataFrame (:func:`to_model_text`), the ``{name}`` prompt interpolation
(:func:`prompt_text`), the stored preview (:func:`preview_value`) and the
panel's note (:func:`frame_shape`) agree. The human keeps the full value.

Every path here looks at a bounded part of the value (a DataFrame's head, a
string's ends, a list's first items) so a 10-million-row frame or a 5 MB string
costs about as much as a small one: nothing is copied or serialised in full.
pandas is never imported unless the value already is a pandas object.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from .bounded import plain, safe_repr, safe_str

HEAD_ROWS = 10
"""Rows of a DataFrame shown to the model (fewer when the budget is tight)."""
MAX_CELL_CHARS = 200
"""Longer text cells in a DataFrame preview are shortened (documents, JSON blobs)."""
MAX_ITEMS = 200
"""Items of a long list/dict serialised before the rest is summarised."""
PROMPT_ROWS = 5
"""Rows of a DataFrame interpolated into a prompt with ``{name}``."""
PROMPT_CHARS = 2_000
"""Longer text interpolated into a prompt is cut in the middle."""
PREVIEW_CHARS = 4000
"""Upper bound of the JSON preview stored for one returned value."""


def is_frame(value: Any) -> bool:
    """True for a pandas DataFrame or Series (without importing pandas)."""
    module = type(value).__module__ or ""
    return module.startswith("pandas") and type(value).__name__ in ("DataFrame", "Series")


def frame_shape(value: Any) -> tuple[str, int, int]:
    """``("DataFrame", rows, columns)`` or ``("Series", rows, 1)`` of a pandas value."""
    shape = value.shape
    return type(value).__name__, int(shape[0]), int(shape[1]) if len(shape) > 1 else 1


def cut_middle(text: str, limit: int) -> tuple[str, bool]:
    """Keep head and tail of ``text`` with a marker saying how much was cut."""
    if len(text) <= limit:
        return text, False
    keep = max(limit - 40, 20)
    head, tail = keep * 2 // 3, keep // 3
    cut = len(text) - head - tail
    return f"{text[:head]}\n[… {cut} characters cut …]\n{text[len(text) - tail :]}", True


def to_model_text(value: Any, limit: int) -> tuple[str, bool]:
    """The text the model sees for ``value`` (at most about ``limit`` characters).

    Returns the text and whether anything was left out.
    """
    if value is None:
        return "null", False
    if isinstance(value, str):
        return cut_middle(value, limit)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return cut_middle(f"<{len(value)} bytes> " + bytes(value[:limit]).hex(" "), limit)
    module = type(value).__module__ or ""
    if module.startswith("pandas"):
        text, partial = _pandas_text(value, limit)
        cut_text, cut = cut_middle(text, limit)
        return cut_text, partial or cut
    if module.startswith("numpy") and hasattr(value, "shape"):
        # numpy's repr already summarises large arrays with "...".
        header = f"array shape={tuple(value.shape)} dtype={value.dtype}\n"
        return cut_middle(header + repr(value), limit)
    text, partial = _json_text(value)
    cut_text, cut = cut_middle(text, limit)
    return cut_text, partial or cut


def _json_text(value: Any) -> tuple[str, bool]:
    """JSON for plain data; long containers keep their first items and say how many.

    Bounded (:mod:`nbagent._internal.bounded`): depth, cycles and sizes are limited, so a list
    nested 100,000 deep becomes a short placeholder, not a RecursionError.
    """
    partial = isinstance(value, (list, tuple, dict, set, frozenset)) and len(value) > MAX_ITEMS
    if _structured(value):
        data = plain(value, items=MAX_ITEMS, other=safe_str)
    else:  # a lone object is its str (which may raise: the caller reports it)
        data = str(value)
    try:
        return json.dumps(data, ensure_ascii=False), partial
    except (TypeError, ValueError):
        return safe_repr(value), partial


def _structured(value: Any) -> bool:
    if isinstance(value, (bool, int, float, str, list, tuple, dict, set, frozenset)):
        return True
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return True
    return callable(getattr(value, "model_dump", None)) and not isinstance(value, type)


def _pandas_text(value: Any, limit: int) -> tuple[str, bool]:
    """Shape, dtypes and the first rows as CSV: compact and unambiguous for a model."""
    import pandas as pd

    if isinstance(value, pd.Series):
        kind, rows, cols = "Series", len(value), 1
        name = value.name if value.name is not None else "value"
        dtypes = f"{name}: {value.dtype}"
        head = value.head(HEAD_ROWS).to_frame(name=name)
    elif isinstance(value, pd.DataFrame):
        kind, (rows, cols) = "DataFrame", value.shape
        dtypes = ", ".join(f"{c}: {t}" for c, t in value.dtypes.items())
        head = value.head(HEAD_ROWS)
    else:
        return str(value), False
    # A default RangeIndex carries no information; any other index does.
    show_index = not isinstance(value.index, pd.RangeIndex) or value.index.start != 0
    header = f"{kind} shape=({rows}, {cols}); dtypes: {dtypes}\n"
    head = bounded_cells(head)
    table = head.to_csv(index=show_index)
    # Drop rows (never columns) until the table fits; the model learns the shape anyway.
    while len(header) + len(table) > limit and len(head) > 1:
        head = head.head(len(head) // 2)
        table = head.to_csv(index=show_index)
    shown = len(head)
    note = f"(first {shown} of {rows} rows)\n" if shown < rows else ""
    return header + note + table, shown < rows


_PLAIN_CELL_MODULES = ("builtins", "numpy", "pandas", "datetime", "decimal")


def bounded_cells(head: Any) -> Any:
    """The preview rows with long strings cut, so ten rows of documents still fit.

    Other objects in text columns (a list nested 100,000 deep, an object whose
    ``repr`` raises) become their bounded, safe text: formatting the table never
    calls user code unguarded.
    """
    from pandas.api.types import is_object_dtype, is_string_dtype

    def shorten(v: Any) -> Any:
        if isinstance(v, str):
            return f"{v[:MAX_CELL_CHARS]}… [{len(v)} chars]" if len(v) > MAX_CELL_CHARS else v
        if v is None or isinstance(v, (bool, int, float)):
            return v
        if isinstance(v, (list, tuple, dict, set, frozenset)):
            text = json.dumps(plain(v, other=safe_str), ensure_ascii=False)
            return text if len(text) <= MAX_CELL_CHARS else text[:MAX_CELL_CHARS] + "…"
        if (type(v).__module__ or "").split(".")[0] in _PLAIN_CELL_MODULES:
            return v
        return safe_str(v, MAX_CELL_CHARS)

    textual = [i for i, t in enumerate(head.dtypes) if is_object_dtype(t) or is_string_dtype(t)]
    if not textual:
        return head
    head = head.copy()  # a few rows only
    for i in textual:
        head.isetitem(i, head.iloc[:, i].map(shorten))
    return head


# -- prompts --------------------------------------------------------------------------


def prompt_text(value: Any) -> str:
    """How a user variable appears in a prompt: DataFrames compactly, long text cut."""
    if is_frame(value):
        kind, rows, cols = frame_shape(value)
        head = value.head(PROMPT_ROWS).to_string(max_cols=20, max_colwidth=40)
        shown = min(rows, PROMPT_ROWS)
        return f"<{kind} with {rows} rows × {cols} columns; first {shown} rows:>\n{head}"
    text = value if isinstance(value, str) else safe_repr(value, PROMPT_CHARS * 4)
    return cut_middle(text, PROMPT_CHARS)[0]


# -- previews stored in the history ----------------------------------------------------


def preview_value(value: Any, limit: int = PREVIEW_CHARS) -> tuple[str | None, str | None]:
    """A bounded JSON preview of a tool's live return value, and its type name.

    DataFrames keep shape, dtypes and their first rows; text and containers are cut
    to ``limit`` characters. Never raises: an object that cannot be previewed gets
    its type only.
    """
    if value is None:
        return None, None
    kind = type(value)
    type_name = kind.__qualname__
    if kind.__module__ != "builtins":
        type_name = f"{kind.__module__}.{type_name}"
    try:
        data = _preview_data(value, limit)
        text = json.dumps(data, ensure_ascii=False, default=str)
    except Exception as error:  # a user object's repr or export failed
        text = json.dumps({"error": f"no preview: {type(error).__name__}"})
    if len(text) > limit:
        text = json.dumps({"truncated": text[: limit - 40]}, ensure_ascii=False)[: limit + 40]
    return type_name, text


def _preview_data(value: Any, limit: int) -> Any:
    if is_frame(value):
        head = value.head(5)
        frame = head.to_frame() if getattr(head, "ndim", 2) == 1 else head
        return {
            "shape": list(value.shape),
            "columns": [str(c) for c in frame.columns],
            "dtypes": [str(t) for t in frame.dtypes],
            "head": json.loads(
                frame.to_json(orient="values", date_format="iso", default_handler=str)
            ),
        }
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return value[:limit]
    if isinstance(value, (list, tuple, dict, set)):
        text = json.dumps(plain(value, other=safe_str), ensure_ascii=False)
        return json.loads(text) if len(text) <= limit else {"text": text[:limit]}
    return {"repr": safe_repr(value, limit)}
