"""Bounded views of arbitrary values: depth, cycles and size limited, never raising.

A leaf module (no nbagent imports). Every value renderer (the panel's JSON, the
model's text, the stored preview, prompt interpolation, Markdown exports) walks a
value through :func:`plain` or :func:`safe_repr` first, so a list nested 100,000
deep, a list that contains itself or a million-item dict costs a bounded amount
of work and renders as a short placeholder instead of raising ``RecursionError``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

__all__ = ["MAX_DEPTH", "MAX_ITEMS", "MAX_NODES", "dumps", "plain", "safe_repr", "safe_str"]

MAX_DEPTH = 32
"""Containers nested deeper than this show as a placeholder."""
MAX_ITEMS = 200
"""Items of one container kept; the rest are counted."""
MAX_NODES = 20_000
"""Values visited in one walk; beyond it the rest are counted, not walked."""
MAX_STRING = 20_000
"""Longer strings inside a container are cut."""

DEEP = "[… nested deeper than {depth} levels …]"
CYCLE = "[… cycle: contains itself …]"


def safe_repr(value: Any, limit: int = 2_000) -> str:
    """``repr(value)`` cut to ``limit``; a placeholder when repr raises (even RecursionError)."""
    try:
        text = repr(value)
    except Exception as error:  # a user's __repr__, or a value too deep for repr
        return f"<{_type_name(value)} object: repr failed ({type(error).__name__})>"
    if not isinstance(text, str):
        return f"<{_type_name(value)} object>"
    return text if len(text) <= limit else text[:limit] + f"… [{len(text):,} chars]"


def _type_name(value: Any) -> str:
    try:
        return type(value).__qualname__
    except Exception:
        return "object"


def safe_str(value: Any, limit: int = 2_000) -> str:
    """``str(value)`` cut to ``limit``; :func:`safe_repr`'s placeholder when str raises."""
    try:
        text = str(value)
    except Exception as error:
        return f"<{_type_name(value)} object: str failed ({type(error).__name__})>"
    return text if len(text) <= limit else text[:limit] + f"… [{len(text):,} chars]"


def plain(
    value: Any,
    *,
    depth: int = MAX_DEPTH,
    items: int = MAX_ITEMS,
    other: Callable[[Any], str] = safe_repr,
) -> Any:
    """``value`` as JSON-ready data (dict, list, str, numbers), within the limits.

    Tuples and sets become lists, dataclasses and pydantic models their fields,
    other objects ``other(value)`` (their safe, cut repr). Too deep, cyclic or too many values
    become short placeholder strings. Never raises.
    """
    return _Walk(depth, items, other).walk(value, 0)


def dumps(value: Any, *, indent: int | None = None, depth: int = MAX_DEPTH) -> str:
    """JSON text of :func:`plain` ``(value)``."""
    return json.dumps(plain(value, depth=depth), indent=indent, ensure_ascii=False)


class _Walk:
    def __init__(self, depth: int, items: int, other: Callable[[Any], str]) -> None:
        self.other = other
        self.depth = depth
        self.items = items
        self.nodes = 0
        self.path: set[int] = set()

    def walk(self, value: Any, level: int) -> Any:
        self.nodes += 1
        if value is None or isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, str):
            return value if len(value) <= MAX_STRING else value[:MAX_STRING] + "…"
        if self.nodes > MAX_NODES:
            return "…"
        if isinstance(value, (list, tuple, set, frozenset, dict)):
            return self._container(value, level)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            try:
                fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            except Exception:
                return self.other(value)
            return self._container(fields, level, key=id(value))
        dump = getattr(value, "model_dump", None)  # pydantic models
        if callable(dump) and not isinstance(value, type):
            try:
                return self.walk(dump(mode="json"), level)
            except Exception:
                return self.other(value)
        return self.other(value)

    def _container(self, value: Any, level: int, key: int | None = None) -> Any:
        if level >= self.depth:
            return DEEP.format(depth=self.depth)
        key = id(value) if key is None else key
        if key in self.path:
            return CYCLE
        self.path.add(key)
        try:
            if isinstance(value, dict):
                out: dict[str, Any] = {}
                for n, (k, v) in enumerate(value.items()):
                    if n >= self.items:
                        out["…"] = f"{len(value) - self.items} more keys"
                        break
                    name = k if isinstance(k, str) else safe_repr(k, 200)
                    out[name] = self.walk(v, level + 1)
                return out
            values = list(value) if isinstance(value, (set, frozenset)) else value
            kept = [self.walk(v, level + 1) for v in values[: self.items]]
            if len(values) > self.items:
                kept.append(f"… {len(values) - self.items} more items")
            return kept
        except Exception:  # a dict changed size while walked, a broken __iter__...
            return safe_repr(value)
        finally:
            self.path.discard(key)
