"""``list_variables``: a compact, bounded inventory of the user namespace.

Only cheap, side-effect-free facts are read: the type, a DataFrame's shape and
dtypes, an array's shape, a builtin container's length, a short repr of builtin
scalars. No user ``__repr__`` or ``__len__`` runs (one that raises or hangs cannot
stall the inventory) and no frame is copied, so 10,000 variables cost milliseconds.
"""

from __future__ import annotations

import types
from typing import Any

from .namespace import KernelView

__all__ = ["INVENTORY_CHARS", "inventory"]

INVENTORY_CHARS = 4_000
"""Upper bound of the inventory text."""
MAX_COLUMNS = 20
"""Columns listed per DataFrame (the rest are counted)."""
SCALAR_CHARS = 60

_SKIPPED = (
    types.ModuleType,
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.BuiltinMethodType,
)


_SKIP, _SHAPED, _PLAIN = 0, 1, 2
_DATA_MODULES = ("pandas", "numpy", "polars", "xarray", "torch")


def _category(kind: type) -> int:
    """Whether values of ``kind`` are left out, sized by their shape, or listed plainly."""
    if issubclass(kind, _SKIPPED):
        return _SKIP
    module = kind.__module__ or ""
    # nbagent's own objects (tools, agents, results) and IPython's helpers are not data.
    if module.startswith(("nbagent", "IPython", "ipykernel", "typing")):
        return _SKIP
    return _SHAPED if module.startswith(_DATA_MODULES) else _PLAIN


def _shape(value: Any) -> tuple[int, ...] | None:
    module = type(value).__module__ or ""
    if module.startswith(_DATA_MODULES):
        shape = getattr(value, "shape", None)
        if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
            return shape
    return None


def _size(value: Any) -> int:
    """Elements in a frame or array (what "largest" means when the inventory must cut)."""
    shape = _shape(value)
    if shape is None:
        return 0
    total = 1
    for n in shape:
        total *= int(n)
    return total


def describe(name: str, value: Any) -> str:
    """One inventory line for ``name``."""
    kind = type(value)
    type_name = kind.__name__
    module = kind.__module__ or ""
    if module.startswith("pandas") and type_name == "DataFrame":
        rows, cols = value.shape
        dtypes = value.dtypes
        shown = [
            f"{c}: {t}"
            for c, t in zip(dtypes.index[:MAX_COLUMNS], dtypes.iloc[:MAX_COLUMNS], strict=False)
        ]
        more = f", … {cols - MAX_COLUMNS} more columns" if cols > MAX_COLUMNS else ""
        return f"{name}: DataFrame {rows} rows × {cols} columns [{', '.join(shown)}{more}]"
    if module.startswith("pandas") and type_name == "Series":
        label = f" name={value.name!r}" if isinstance(value.name, (str, int)) else ""
        return f"{name}: Series {len(value)} rows, dtype {value.dtype}{label}"
    shape = _shape(value)
    if shape is not None:
        dtype = getattr(value, "dtype", None)
        return f"{name}: {type_name} shape {shape}" + (
            f", dtype {dtype}" if dtype is not None else ""
        )
    # Exact builtin types only: a subclass's own __repr__/__len__ could raise or hang.
    if kind in (bool, int, float, complex) or value is None:
        return f"{name}: {type_name} = {_short(repr(value))}"
    if kind is str:
        return f"{name}: str, {len(value)} chars = {_short(repr(value))}"
    if kind in (bytes, bytearray):
        return f"{name}: {type_name}, {len(value)} bytes"
    if kind in (list, tuple, dict, set, frozenset):
        unit = "keys" if kind is dict else "items"
        return f"{name}: {type_name}, {len(value)} {unit}"
    qualified = type_name if module in ("builtins", "") else f"{module}.{type_name}"
    return f"{name}: {qualified}"


def _short(text: str) -> str:
    return text if len(text) <= SCALAR_CHARS else text[: SCALAR_CHARS - 1] + "…"


def inventory(view: KernelView, limit: int = INVENTORY_CHARS) -> str:
    """The inventory text: one line per variable.

    Largest frames/arrays first, then the most recently defined; when it must cut,
    the last line says what was left out.
    """
    shaped: list[tuple[int, str, Any]] = []
    plain: list[tuple[str, Any]] = []
    categories: dict[type, int] = {}
    hidden = view.hidden
    for name, value in list(view.ns.items()):
        if name.startswith("_") or name in hidden:
            continue
        kind = type(value)
        category = categories.get(kind)
        if category is None:
            category = categories[kind] = _category(kind)
        if category == _SKIP:
            continue
        if category == _SHAPED:
            try:
                shaped.append((_size(value), name, value))
            except Exception:  # noqa: BLE001 - an odd object must not break the inventory
                plain.append((name, value))
        else:
            plain.append((name, value))
    if not shaped and not plain:
        return "The namespace holds no user variables."
    shaped.sort(key=lambda entry: -entry[0])  # largest first (stable: older first on ties)
    plain.reverse()  # most recently defined first
    entries = [(name, value) for _, name, value in shaped] + plain
    lines: list[str] = []
    used = 0
    left: list[str] = []
    for index, (name, value) in enumerate(entries):
        try:
            line = describe(name, value)
        except Exception as exc:  # noqa: BLE001
            line = f"{name}: {type(value).__name__} (not described: {type(exc).__name__})"
        if used + len(line) + 1 > limit - 300 and lines:  # room for the last line
            left = [entry[0] for entry in entries[index:]]
            break
        lines.append(line)
        used += len(line) + 1
    header = f"{len(entries)} variables in the kernel"
    if left:
        names = ", ".join(left[:20]) + (", …" if len(left) > 20 else "")
        lines.append(f"({len(left)} more not listed: {names})")
        header += f", {len(entries) - len(left)} listed (largest and most recent first)"
    return header + ":\n" + "\n".join(lines)
