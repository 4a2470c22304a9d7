"""``list_variables``: a compact, bounded inventory of the user namespace.

Only cheap facts are read: the type, a DataFrame's shape and dtypes, an array's
shape, a builtin container's length, a short repr of builtin scalars. No user
``__repr__`` or ``__len__`` runs and no frame is copied, so 10,000 variables cost
milliseconds. ``.shape`` is read only of types the data libraries define themselves
(not a user's class that names itself ``numpy.x``), yet that is still code (a
patched or lazy library object can take any time), and the inventory is built when
a run starts, on nbagent's event loop. So the facts are read on a worker
thread within :data:`INVENTORY_SECONDS`, as prompt fields are: past that the
inventory lists each variable by name and type only (read without running any of
its code), says which value was too slow, and later inventories list values of that
type by type only. The loop thread never runs user code.
"""

from __future__ import annotations

import threading
import types
import weakref
from typing import Any

from .._internal.threads import TIMED_OUT, wait_bounded
from .namespace import KernelView
from .static import defined_in

__all__ = ["INVENTORY_CHARS", "INVENTORY_SECONDS", "inventory"]

INVENTORY_SECONDS = 2.0
"""How long reading the variables' facts may take, all together, before the inventory
lists them by name and type only."""

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
_TYPE_NAME = type.__dict__["__name__"]
_TYPE_MODULE = type.__dict__["__module__"]
_slow_types: weakref.WeakSet[type] = weakref.WeakSet()
"""Types whose facts took too long once: listed by type only from then on."""


def _type_facts(kind: type) -> tuple[str, str]:
    """(name, module) of a type, read from the type object itself.

    ``kind.__name__`` could run a metaclass's property or ``__getattribute__``.
    """
    try:
        name = _TYPE_NAME.__get__(kind, type)
        module = _TYPE_MODULE.__get__(kind, type)
    except Exception:  # noqa: BLE001 - an odd type object
        return "object", ""
    return (name if isinstance(name, str) else "object"), (
        module if isinstance(module, str) else ""
    )


_DATA_MODULES = ("pandas", "numpy", "polars", "xarray", "torch")


def _category(kind: type) -> int:
    """Whether values of ``kind`` are left out, sized by their shape, or listed plainly."""
    if issubclass(kind, _SKIPPED):
        return _SKIP
    module = _type_facts(kind)[1]
    # nbagent's own objects (tools, agents, results) and IPython's helpers are not data.
    if module.startswith(("nbagent", "IPython", "ipykernel", "typing")):
        return _SKIP
    # Defined by the library itself: a user's class naming itself "numpy.x" is not data.
    return (
        _SHAPED if module.startswith(_DATA_MODULES) and defined_in(kind, _DATA_MODULES) else _PLAIN
    )


def _shape(value: Any) -> tuple[int, ...] | None:
    kind = type(value)
    if kind in _slow_types:
        return None
    if defined_in(kind, _DATA_MODULES):
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
    type_name = _type_facts(kind)[0]
    if kind in _slow_types:
        return _type_line(name, kind)
    trusted = defined_in(kind, ("pandas",))
    if trusted and type_name == "DataFrame":
        rows, cols = value.shape
        dtypes = value.dtypes
        shown = [
            f"{c}: {t}"
            for c, t in zip(dtypes.index[:MAX_COLUMNS], dtypes.iloc[:MAX_COLUMNS], strict=False)
        ]
        more = f", … {cols - MAX_COLUMNS} more columns" if cols > MAX_COLUMNS else ""
        return f"{name}: DataFrame {rows} rows × {cols} columns [{', '.join(shown)}{more}]"
    if trusted and type_name == "Series":
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
    return _type_line(name, kind)


def _type_line(name: str, kind: type) -> str:
    """``name: module.Type``: nothing of the value is read."""
    type_name, module = _type_facts(kind)
    qualified = type_name if module in ("builtins", "") else f"{module}.{type_name}"
    return f"{name}: {qualified}"


def _short(text: str) -> str:
    return text if len(text) <= SCALAR_CHARS else text[: SCALAR_CHARS - 1] + "…"


def inventory(
    view: KernelView, limit: int = INVENTORY_CHARS, *, seconds: float = INVENTORY_SECONDS
) -> str:
    """The inventory text: one line per variable.

    Largest frames/arrays first, then the most recently defined; when it must cut,
    the last line says what was left out. The facts are read on a worker thread; past
    ``seconds`` the variables are listed by type only (see the module docstring).
    """
    entries = list(view.ns.items())  # a plain dict: copying it runs no user code
    progress = _Progress()
    text = wait_bounded(_inventory_text, view, entries, limit, progress, seconds=seconds)
    if text is not TIMED_OUT:
        return str(text)
    progress.abandoned.set()  # the worker stops at its next variable
    slow = progress.current
    if slow is not None:
        _slow_types.add(type(slow[1]))
    return _types_only(view, entries, limit, slow[0] if slow else None, seconds)


class _Progress:
    """What the worker is reading now, and whether the caller gave up on it."""

    def __init__(self) -> None:
        self.current: tuple[str, Any] | None = None
        self.abandoned = threading.Event()


class _Abandoned(Exception):
    pass


def _inventory_text(
    view: KernelView, items: list[tuple[str, Any]], limit: int, progress: _Progress
) -> str:
    shaped: list[tuple[int, str, Any]] = []
    plain: list[tuple[str, Any]] = []
    categories: dict[type, int] = {}
    hidden = view.hidden
    for name, value in items:
        if name.startswith("_") or name in hidden:
            continue
        kind = type(value)
        category = categories.get(kind)
        if category is None:
            category = categories[kind] = _category(kind)
        if category == _SKIP:
            continue
        if category == _SHAPED:
            if progress.abandoned.is_set():
                raise _Abandoned
            progress.current = (name, value)
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

    def line(name: str, value: Any) -> str:
        if progress.abandoned.is_set():
            raise _Abandoned
        progress.current = (name, value)
        try:
            return describe(name, value)
        except Exception as exc:  # noqa: BLE001
            return f"{_type_line(name, type(value))} (not described: {type(exc).__name__})"

    return _assemble(entries, limit, line)


def _assemble(entries: list[tuple[str, Any]], limit: int, line: Any, note: str = "") -> str:
    lines: list[str] = []
    used = len(note)
    left: list[str] = []
    for index, (name, value) in enumerate(entries):
        text = line(name, value)
        if used + len(text) + 1 > limit - 300 and lines:  # room for the last line
            left = [entry[0] for entry in entries[index:]]
            break
        lines.append(text)
        used += len(text) + 1
    header = f"{len(entries)} variables in the kernel"
    if left:
        names = ", ".join(left[:20]) + (", …" if len(left) > 20 else "")
        lines.append(f"({len(left)} more not listed: {names})")
        header += f", {len(entries) - len(left)} listed (largest and most recent first)"
    return header + note + ":\n" + "\n".join(lines)


def _types_only(
    view: KernelView, items: list[tuple[str, Any]], limit: int, slow: str | None, seconds: float
) -> str:
    """The inventory by name and type alone: what is left when reading facts took too long."""
    entries = []
    for name, value in reversed(items):  # most recently defined first
        if name.startswith("_") or name in view.hidden:
            continue
        kind = type(value)
        if issubclass(kind, _SKIPPED) or _type_facts(kind)[1].startswith(
            ("nbagent", "IPython", "ipykernel", "typing")
        ):
            continue
        entries.append((name, value))
    if not entries:
        return "The namespace holds no user variables."
    what = f"reading {slow!r} took" if slow else "reading their sizes took"
    note = f" (by type only: {what} over {seconds:g} s)"
    return _assemble(entries, limit, lambda name, value: _type_line(name, type(value)), note)
