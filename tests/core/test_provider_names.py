"""No provider name is compared against or keyed on outside ``nbagent/providers/``.

What a model can do is declared by its provider (``Capabilities``); code elsewhere
that branches on ``provider == "openai"`` or keeps a ``{"gemini": ...}`` table is
knowledge a new provider would have to find. Read from the source with ``ast``:
string constants in comparisons (``==``, ``!=``, ``in``, ``not in``, also inside
tuples, lists and sets), dict keys, subscripts and ``match`` cases.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from nbagent.providers import registered

PACKAGE = Path(__file__).resolve().parents[2] / "nbagent"
PROVIDERS = PACKAGE / "providers"

OTHER_IDS = ("google", "gcp.gemini")
"""Names providers declare for others (genai-prices' Gemini id, the tracing name)."""


def provider_names() -> set[str]:
    built_in = {"openai", "anthropic", "gemini", "ollama", "local", "scripted"}
    return built_in | set(registered()) | set(OTHER_IDS)


def _strings(node: ast.AST) -> Iterator[str]:
    """String constants of ``node`` itself or of a tuple/list/set literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for element in node.elts:
            yield from _strings(element)


def named_providers(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of every provider name compared against or keyed on in ``source``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        candidates: list[ast.AST] = []
        if isinstance(node, ast.Compare):
            candidates = [node.left, *node.comparators]
        elif isinstance(node, ast.Dict):
            candidates = [key for key in node.keys if key is not None]
        elif isinstance(node, ast.Subscript):
            candidates = [node.slice]
        elif isinstance(node, ast.MatchValue):
            candidates = [node.value]
        for candidate in candidates:
            found += [(node.lineno, s) for s in _strings(candidate) if s.lower() in names]
    return found


def test_the_scan_finds_every_kind_of_use() -> None:
    source = """
if provider == "openai": pass
if name in ("ollama", "x"): pass
table = {"gemini": 1}
value = table["anthropic"]
match provider:
    case "local": pass
ok = {"notebook": provider.name}  # values and other strings are fine
"""
    found = named_providers(source, provider_names())
    assert found == [(2, "openai"), (3, "ollama"), (4, "gemini"), (5, "anthropic"), (7, "local")]


def test_no_provider_name_is_compared_or_keyed_outside_providers() -> None:
    names = provider_names()
    wrong = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {name!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if PROVIDERS not in path.parents
        for line, name in named_providers(path.read_text(encoding="utf-8"), names)
    ]
    assert not wrong, "ask the provider's Capabilities instead:\n" + "\n".join(wrong)
