"""A tool's return value as HTML: DataFrame table, image, JSON or text.

The value is the live Python object (``ToolResult.value``); when it is gone
(a conversation reloaded from storage) the model-visible text is shown instead.
pandas, matplotlib and PIL are never imported here: a value is recognised by the
module of its type, so rendering a string costs nothing extra.
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any

from .._internal.bounded import dumps, safe_repr
from .._internal.safe_text import clean
from .._internal.values import bounded_cells, frame_shape, is_frame
from .escaping import escape

__all__ = ["render_value_html"]

_MAX_TEXT_CHARS = 20_000


def _module(value: Any) -> str:
    return type(value).__module__ or ""


def _pre(text: str) -> str:
    if len(text) > _MAX_TEXT_CHARS:
        cut = len(text) - _MAX_TEXT_CHARS
        text = text[:_MAX_TEXT_CHARS] + f"\n[… {cut:,} more characters not shown …]"
    return f"<pre>{escape(text)}</pre>"


def _json_or_text(text: str) -> str:
    """Pretty-print ``text`` when it is a JSON object or array, else show it as is."""
    stripped = text.strip()
    if stripped[:1] in "[{":
        try:
            return _pre(dumps(json.loads(stripped), indent=2))
        except (ValueError, RecursionError):  # not JSON, or JSON nested too deep to parse
            pass
    return _pre(text)


def _dataframe_html(value: Any, max_rows: int) -> str:
    kind, rows, cols = frame_shape(value)
    frame = value.to_frame() if kind == "Series" else value
    # escape=True escapes cells, column names and the index; render_links stays off.
    # Cells are bounded first (deep or unprintable objects), bidi/control chars cleaned.
    try:
        head = bounded_cells(frame.head(max_rows))
        table = clean(
            head.to_html(escape=True, border=0, classes="nba-table", max_cols=50, notebook=False)
        )
    except Exception as error:  # a column name or index pandas cannot format
        table = f"<pre>{escape(f'(the table could not be shown: {type(error).__name__})')}</pre>"
    shown = min(rows, max_rows)
    note = f"{kind}: {rows:,} rows × {cols:,} columns"
    if shown < rows:
        note += f" (first {shown} shown)"
    return f'<div class="nba-note">{escape(note)}</div><div class="nba-frame">{table}</div>'


def _png_html(png: bytes, alt: str) -> str:
    # The data: URL is built here from bytes we encoded, never from model text.
    data = base64.b64encode(png).decode("ascii")
    return f'<img class="nba-image" alt="{escape(alt)}" src="data:image/png;base64,{data}">'


def _figure_png(value: Any) -> bytes | None:
    """PNG bytes of a matplotlib Figure / Axes or a PIL image, else None."""
    module = _module(value)
    if module.startswith("matplotlib"):
        figure = value if hasattr(value, "savefig") else getattr(value, "figure", None)
        if figure is None or not hasattr(figure, "savefig"):
            return None
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", bbox_inches="tight")
        return buffer.getvalue()
    if module.startswith("PIL") and hasattr(value, "save"):
        buffer = io.BytesIO()
        plain_modes = ("RGB", "RGBA", "L", "LA", "P", "1")
        image = value if value.mode in plain_modes else value.convert("RGBA")
        image.save(buffer, format="PNG")
        return buffer.getvalue()
    repr_png = getattr(value, "_repr_png_", None)
    if callable(repr_png) and not isinstance(value, type):
        try:
            png = repr_png()
        except Exception:  # a broken _repr_png_ must not break the transcript
            return None
        return png if isinstance(png, bytes) else None
    return None


def render_value_html(value: Any, content: str = "", *, max_rows: int = 10) -> str:
    """HTML for a tool's return value; ``content`` (the model's text) is the fallback."""
    if value is None:
        return _json_or_text(content)
    if isinstance(value, str):
        return _pre(value)
    if is_frame(value):
        return _dataframe_html(value, max_rows)
    png = _figure_png(value)
    if png is not None:
        return _png_html(png, f"{type(value).__name__} returned by the tool")
    if isinstance(value, (dict, list, tuple, int, float, bool)):
        # Bounded: depth, cycles and sizes limited (nbagent._internal.bounded), never raises.
        return _pre(dumps(value, indent=2))
    # Other objects: their _repr_html_ could carry script, so show text only.
    return _json_or_text(content) if content else _pre(safe_repr(value, _MAX_TEXT_CHARS))
