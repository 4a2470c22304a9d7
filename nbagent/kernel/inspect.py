"""``inspect_variable``: a closer, bounded look at one variable, running none of its code.

Names are resolved by walking the expression (``df``, ``df.columns``,
``data["key"]``, ``rows[0]``): attribute and item access only, never ``eval``.
Inspection is a read: the model asks for it without the user's approval, so it
must not run the user's code, which may have side effects
(``acct.close_account`` as a property, a dict subclass's ``__getitem__``, a
``__repr__`` that writes a file). Only these are read:

- attributes found statically (:mod:`.static`): instance fields, methods (bound
  without calling anything), class attributes, slots; a property or another
  Python-level descriptor is *not* evaluated, and the answer says so;
- items of exact builtin lists, tuples, strings and dicts;
- pandas and numpy objects (types defined by those libraries, not subclasses), whose
  attributes, items and formatting are library code; cells holding other objects are
  shown by type;
- a repr only for exact builtin values and a few standard-library scalars.

Anything else is described from its type and fields; evaluating more is what
``run_python`` is for, and that asks the user first.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import types
from typing import Any

from .._internal.values import cut_middle
from .namespace import KernelView
from .static import (
    NotEvaluated,
    class_members,
    exact_builtin_base,
    is_trusted,
    public_class_attributes,
    static_attribute,
    static_item,
    static_repr,
    type_label,
)

__all__ = ["InspectError", "NotEvaluated", "inspect_text", "resolve"]

REPR_CHARS = 2_000
MAX_ATTRIBUTES = 40
MAX_FIELDS = 30
MAX_ROWS = 50
PLAIN_CHECKED = 10_000
"""Object arrays up to this size whose items are all plain values print as the library does."""
PLAIN_TYPES = frozenset({str, bytes, int, float, bool, complex, type(None)})


class InspectError(Exception):
    """The name could not be resolved; the message says why (and what is close)."""


def _steps(expression: str) -> tuple[str, list[tuple[str, Any]]]:
    """The name and its ``.attr`` / ``[constant]`` steps, in order."""
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
    return node.id, list(reversed(steps))


def resolve(view: KernelView, expression: str) -> Any:
    """The value ``expression`` names, read without running the user's code.

    Raises:
        InspectError: the name or a step does not exist (the message lists close names).
        NotEvaluated: a step would run the user's code (the message says which and why).
    """
    name, steps = _steps(expression)
    if name not in view.ns:
        visible = [n for n in view.ns if not view.is_hidden(n)]
        close = difflib.get_close_matches(name, visible, n=5, cutoff=0.5)
        hint = f" Close matches: {', '.join(close)}." if close else ""
        raise InspectError(f"No variable named {name!r} in the kernel.{hint}")
    value = view.ns[name]
    path = name
    for kind, key in steps:
        if kind == "attr":
            path += f".{key}"
            try:
                value = static_attribute(value, key, path)
            except AttributeError as missing:
                close = difflib.get_close_matches(key, list(missing.args[1:]), n=5, cutoff=0.5)
                hint = f" Close matches: {', '.join(close)}." if close else ""
                raise InspectError(f"{path}: no such attribute.{hint}") from None
        else:
            path += f"[{key!r}]"
            try:
                value = static_item(value, key, path)
            except (KeyError, IndexError, TypeError) as exc:
                raise InspectError(f"{path}: {type(exc).__name__}: {exc}") from None
    return value


def _library_repr(value: Any, limit: int = REPR_CHARS) -> str:
    try:
        text = repr(value)
    except Exception as exc:  # noqa: BLE001 - a library that cannot print this value
        return f"<repr raised {type(exc).__name__}>"
    return cut_middle(text, limit)[0]


def _frame_text(value: Any, rows: int) -> str:
    import pandas as pd

    frame = value.to_frame() if isinstance(value, pd.Series) else value
    frame = _plain_labels(frame)
    kind = type(value).__name__
    parts = [f"{kind} shape={tuple(value.shape)}"]
    parts.append("dtypes:\n" + frame.dtypes.to_string())
    parts.append("null counts:\n" + frame.isna().sum().to_string())
    numeric = frame.select_dtypes("number")
    if numeric.shape[1]:
        parts.append("describe():\n" + numeric.describe().to_string(max_cols=30))
    rows = max(0, min(rows, MAX_ROWS))
    if rows:
        head = _plain_cells(frame.head(rows))
        parts.append(
            f"first {min(rows, len(frame))} rows:\n" + head.to_string(max_cols=30, max_colwidth=60)
        )
    return "\n\n".join(parts)


def _plain_labels(frame: Any) -> Any:
    """``frame`` with column labels that are not plain values shown by type (no user repr)."""
    labels = list(frame.columns)
    safe = [static_repr(label, 60, quote=False) for label in labels]
    if all(type(label) in (str, int, float) for label in labels):
        return frame
    return frame.set_axis(safe, axis=1)


def _plain_cells(head: Any) -> Any:
    """The first rows with object cells (and an object index) shown by :func:`static_repr`."""
    head = head.copy()
    for position, dtype in enumerate(head.dtypes):
        if dtype.kind == "O":
            cells = head.iloc[:, position].map(lambda v: static_repr(v, 60, quote=False))
            head.isetitem(position, cells)
    if head.index.dtype.kind == "O":
        head.index = [static_repr(v, 60, quote=False) for v in head.index]
    return head


def _array_lines(value: Any) -> list[str]:
    import numpy as np

    lines = [f"shape: {tuple(value.shape)}, dtype: {value.dtype}"]
    if value.dtype.kind == "O":  # the library would call each element's own repr
        flat = np.asarray(value).ravel()
        if len(flat) > PLAIN_CHECKED or not all(type(v) in PLAIN_TYPES for v in flat):
            items = [static_repr(v, 80) for v in flat[:20]]
            more = ", …" if len(flat) > 20 else ""
            lines.append(f"first items: [{', '.join(items)}{more}]")
            return lines
    lines.append("repr: " + _library_repr(value))
    return lines


def _object_lines(value: Any) -> list[str]:
    """What can be read of any other object without running its code."""
    lines: list[str] = []
    base: Any = exact_builtin_base(value)
    if base is not None:  # a subclass of a builtin: the builtin's own length and items
        lines.append(f"length: {base.__len__(value)} (as a {base.__name__})")
        lines.append(
            f"items ({base.__name__}'s view): " + static_repr(value, REPR_CHARS, base=base)
        )
    lines.append(
        f"repr: not evaluated ({type_label(type(value))} objects print with their own code)"
    )
    fields = public_class_attributes(value, fields_only=True)
    if fields:
        shown = [f"  {name} = {text}" for name, text in fields[:MAX_FIELDS]]
        if len(fields) > MAX_FIELDS:
            shown.append(f"  … {len(fields) - MAX_FIELDS} more fields")
        lines.append("fields:\n" + "\n".join(shown))
    members = public_class_attributes(value, fields_only=False)
    if members:
        more = len(members) - MAX_ATTRIBUTES
        listed = ", ".join(f"{n} ({k})" for n, k in members[:MAX_ATTRIBUTES])
        lines.append("class attributes: " + listed + (f", … {more} more" if more > 0 else ""))
    return lines


def _function_lines(value: Any) -> list[str]:
    """A function's parameters and docstring summary: plain data of the function object."""
    function = value.__func__ if type(value) is types.MethodType else value
    code = function.__code__
    count = code.co_argcount + code.co_kwonlyargcount
    names = list(code.co_varnames[:count])
    if code.co_flags & inspect.CO_VARARGS:
        names.insert(code.co_argcount, "*" + code.co_varnames[count])
    lines = [f"parameters: ({', '.join(names)})"]
    doc = function.__doc__
    if type(doc) is str and doc.strip():
        lines.append("doc: " + doc.strip().splitlines()[0][:200])
    return lines


def inspect_text(view: KernelView, name: str, rows: int = 5) -> str:
    """What ``inspect_variable`` tells the model about ``name``."""
    try:
        value = resolve(view, name)
    except NotEvaluated as refused:
        return str(refused)  # an answer, not an error: the model learns what to do instead
    kind = type(value)
    if (
        is_trusted(kind)
        and type_label(kind).startswith("pandas.")
        and kind.__name__
        in (
            "DataFrame",
            "Series",
        )
    ):
        return f"{name}: " + _frame_text(value, rows)
    lines = [f"{name}: {type_label(kind)}"]
    if is_trusted(kind) and hasattr(value, "shape") and hasattr(value, "dtype"):
        lines += _array_lines(value)
    elif is_trusted(kind) or exact_builtin_base(value) is kind:
        if kind in (str, bytes, list, tuple, dict, set, frozenset):
            lines.append(f"length: {len(value)}")
        shown = static_repr(value, REPR_CHARS) if not is_trusted(kind) else _library_repr(value)
        lines.append("repr: " + shown)
    elif static_repr(value, 80) != f"<{type_label(kind)} object>":  # a trusted scalar type
        lines.append("repr: " + static_repr(value, REPR_CHARS))
    elif kind in (types.FunctionType, types.MethodType):
        lines += _function_lines(value)
    elif issubclass(kind, type):  # a class: its members, read from its dictionaries
        lines[0] = f"{name}: class {type_label(value)}"
        members = class_members(value)
        more = len(members) - MAX_ATTRIBUTES
        listed = ", ".join(f"{n} ({k})" for n, k in members[:MAX_ATTRIBUTES])
        lines.append("attributes: " + (listed or "none") + (f", … {more} more" if more > 0 else ""))
    else:
        lines += _object_lines(value)
    return "\n".join(lines)
