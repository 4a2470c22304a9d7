"""The package's layering holds, lazy imports included, and nobody reads private names.

    leaves < messages < run values < tools < providers < loop
           < {store, recording, render} < batch < agent < surfaces

The graph is read from the source with ``ast`` (every ``import``, at module level,
inside functions and under ``TYPE_CHECKING``), so a lazy import that points the
wrong way fails here just like a module-level one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "nbagent"

# The first matching prefix decides a module's layer (longest prefixes first).
LAYERS: list[tuple[int, tuple[str, ...]]] = [
    (0, ("nbagent._internal", "nbagent.errors")),  # internal leaves: text, values, threads, logs
    (1, ("nbagent.messages",)),
    (2, ("nbagent.results", "nbagent.events", "nbagent.run.stops")),
    (3, ("nbagent.tools",)),
    (3, ("nbagent.kernel",)),
    (4, ("nbagent.providers", "nbagent.testing", "nbagent.mcp", "nbagent.run.output",
         "nbagent.cost")),  # cost asks the provider's declared pricing id
    (5, ("nbagent.run",)),  # the run engine: loop, steps, budgets, status lines
    (6, ("nbagent.store", "nbagent.recording", "nbagent.render", "nbagent.tracing")),
    (7, ("nbagent.batch",)),  # Agent.map's engine: rows, journal, executor, limits, progress
    (7, ("nbagent.batch.provider_batch",)),  # mode="batch": jobs over the providers' batch APIs
    (7, ("nbagent.batch.distributed",)),  # executor="ray"/"dask": rows on a cluster
    (8, ("nbagent.agent",)),
    (9, ("nbagent.magic", "nbagent.widget", "nbagent.chat", "nbagent.live", "nbagent.terminal",
         "nbagent.demo", "nbagent.cli", "nbagent.__init__")),
]  # fmt: skip
SIBLINGS = {6}
"""Layers whose parts must not import each other (store, recording and render are peers)."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1 and parts != ["nbagent", "__init__"]:
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(name: str) -> tuple[int, str]:
    """(layer number, the prefix that matched: the part's identity within its layer)."""
    if name == "nbagent":
        name = "nbagent.__init__"
    best: tuple[int, str] | None = None
    for number, prefixes in LAYERS:
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and (
                best is None or len(prefix) > len(best[1])
            ):
                best = (number, prefix)
    assert best is not None, f"{name} has no layer: add it to LAYERS in {__file__}"
    return best


def imports(name: str, path: Path) -> list[tuple[str, list[str], int]]:
    """(imported module, names imported from it, line) for every import in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, [], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((target, [a.name for a in node.names], node.lineno))
    return found


def edges() -> list[tuple[str, str, list[str], int]]:
    known = modules()
    out = []
    for name, path in known.items():
        for target, names, line in imports(name, path):
            if not target.startswith("nbagent"):
                continue
            # "from nbagent.providers import openai" imports the submodule openai.
            submodules = [f"{target}.{n}" for n in names if f"{target}.{n}" in known]
            for module in submodules or [target]:
                out.append((name, module, names, line))
    return out


def test_every_module_has_a_layer():
    for name in modules():
        layer(name)


def test_imports_point_down_the_layers():
    wrong = []
    for source, target, _names, line in edges():
        (low, low_part), (high, high_part) = layer(target), layer(source)
        if low > high or (low == high and high in SIBLINGS and low_part != high_part):
            wrong.append(f"{source}:{line} imports {target}")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles():
    graph: dict[str, set[str]] = {}
    for source, target, _names, _line in edges():
        if source != target:
            graph.setdefault(source, set()).add(target)
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt) :] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_no_module_imports_another_modules_private_names():
    wrong = []
    for source, target, names, line in edges():
        if target == source:
            continue
        private = [n for n in names if n.startswith("_") and not n.startswith("__")]
        if private:
            wrong.append(f"{source}:{line} imports {', '.join(private)} from {target}")
    assert not wrong, "\n".join(wrong)


def test_no_module_is_over_600_lines():
    long = {
        name: count
        for name, path in modules().items()
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert not long, long
