"""``inspect_variable``: a closer, bounded look at one variable.

Names are resolved by walking the expression (``df``, ``df.columns``,
``data["key"]``, ``rows[0]``): attribute and item access only, never ``eval``.
"""

from __future__ import annotations

import ast
import difflib
from typing import Any

from .._internal.values import cut_middle, is_frame
from .namespace import KernelView

__all__ = ["InspectError", "inspect_text", "resolve"]

REPR_CHARS = 2_000
MAX_ATTRIBUTES = 40
MAX_ROWS = 50


class InspectError(Exception):
    """The name could not be resolved; the message says why (and what is close)."""


def resolve(view: KernelView, expression: str) -> Any:
    """The value ``expression`` names: a name, then ``.attr`` and ``[constant]`` steps."""
    try:
        node = ast.parse(expression.strip(), mode="eval").body
    except SyntaxError:
        raise InspectError(f"{expression!r} is not a variable name or path") from None
    steps: list[tuple[str, Any]] = []
    while not isinstance(node, ast.Name):
        if isinstance(node, ast.Attribute):
            steps.append(("attr", node.attr))
            node = node.value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            steps.append(("item", node.slice.value))
            node = node.value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.UnaryOp):
            try:
                key = ast.literal_eval(node.slice)
            except ValueError:
                raise InspectError(f"{expression!r}: only constant keys are looked up") from None
            steps.append(("item", key))
            node = node.value
        else:
            raise InspectError(
                f"{expression!r}: use a name with .attribute or [constant key] steps"
            )
    name = node.id
    if name not in view.ns:
        visible = [n for n in view.ns if not view.is_hidden(n)]
        close = difflib.get_close_matches(name, visible, n=5, cutoff=0.5)
        hint = f" Close matches: {', '.join(close)}." if close else ""
        raise InspectError(f"No variable named {name!r} in the kernel.{hint}")
    value = view.ns[name]
    path = name
    for kind, key in reversed(steps):
        if kind == "attr":
            path += f".{key}"
            try:
                value = getattr(value, key)
            except AttributeError:
                attrs = [a for a in dir(value) if not a.startswith("_")]
                close = difflib.get_close_matches(key, attrs, n=5, cutoff=0.5)
                hint = f" Close matches: {', '.join(close)}." if close else ""
                raise InspectError(f"{path}: no such attribute.{hint}") from None
        else:
            path += f"[{key!r}]"
            try:
                value = value[key]
            except (KeyError, IndexError, TypeError) as exc:
                raise InspectError(f"{path}: {type(exc).__name__}: {exc}") from None
    return value


def _safe_repr(value: Any, limit: int = REPR_CHARS) -> str:
    try:
        text = repr(value)
    except Exception as exc:  # noqa: BLE001 - a broken __repr__ is a fact to report
        return f"<repr raised {type(exc).__name__}: {exc}>"
    return cut_middle(text, limit)[0]


def _frame_text(value: Any, rows: int) -> str:
    import pandas as pd

    frame = value.to_frame() if isinstance(value, pd.Series) else value
    kind = type(value).__name__
    parts = [f"{kind} shape={tuple(value.shape)}"]
    parts.append("dtypes:\n" + frame.dtypes.to_string())
    parts.append("null counts:\n" + frame.isna().sum().to_string())
    numeric = frame.select_dtypes("number")
    if numeric.shape[1]:
        parts.append("describe():\n" + numeric.describe().to_string(max_cols=30))
    rows = max(0, min(rows, MAX_ROWS))
    if rows:
        parts.append(
            f"first {min(rows, len(frame))} rows:\n"
            + frame.head(rows).to_string(max_cols=30, max_colwidth=60)
        )
    return "\n\n".join(parts)


def inspect_text(view: KernelView, name: str, rows: int = 5) -> str:
    """What ``inspect_variable`` tells the model about ``name``."""
    value = resolve(view, name)
    if is_frame(value):
        return f"{name}: " + _frame_text(value, rows)
    kind = type(value)
    module = kind.__module__ or ""
    qualified = kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"
    lines = [f"{name}: {qualified}"]
    shape = getattr(value, "shape", None) if module.startswith("numpy") else None
    if shape is not None:
        lines.append(f"shape: {tuple(shape)}, dtype: {getattr(value, 'dtype', '?')}")
    elif isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)):
        try:
            lines.append(f"length: {len(value)}")
        except Exception as exc:  # noqa: BLE001 - a subclass's broken __len__ is a fact too
            lines.append(f"length: <len raised {type(exc).__name__}: {exc}>")
    lines.append("repr: " + _safe_repr(value))
    if module != "builtins":
        try:
            attributes = [a for a in dir(value) if not a.startswith("_")]
        except Exception:  # noqa: BLE001
            attributes = []
        if attributes:
            more = len(attributes) - MAX_ATTRIBUTES
            shown = ", ".join(attributes[:MAX_ATTRIBUTES]) + (
                f", … {more} more" if more > 0 else ""
            )
            lines.append("public attributes: " + shown)
    return "\n".join(lines)
