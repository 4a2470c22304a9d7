"""A tutorial's install line brings every package the tutorial imports."""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]

tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from 3.11")


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[(]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _closure(requirements: list[str]) -> set[str]:
    """The distributions those requirements install, with their own dependencies."""
    seen: set[str] = set()
    todo = [r for r in requirements if "extra ==" not in r]
    while todo:
        name = _name(todo.pop())
        if name in seen or name == "nbagent":
            continue
        seen.add(name)
        try:
            todo += [r for r in metadata.requires(name) or [] if "extra ==" not in r]
        except metadata.PackageNotFoundError:
            pass
    return seen


def _installed(extras: list[str]) -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    optional = project["optional-dependencies"]
    requirements = list(project["dependencies"])
    for extra in extras:
        for requirement in optional[extra]:
            inner = re.fullmatch(r"nbagent\[(.+)\]", requirement.strip())
            requirements += (
                [r for e in inner.group(1).split(",") for r in optional[e.strip()]]
                if inner
                else [requirement]
            )
    return _closure(requirements)


def _imported_modules(nb: nbformat.NotebookNode) -> set[str]:
    modules: set[str] = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        source = "\n".join(
            line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!"))
        )
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                modules.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules.add(node.module)
    return modules


def _distribution_of(module: str) -> str:
    """The installed distribution that ships ``module`` (namespace packages included)."""
    top = module.split(".")[0]
    candidates = metadata.packages_distributions().get(top, [])
    path = module.replace(".", "/")
    for candidate in candidates:
        files = metadata.distribution(candidate).files or []
        if any(str(f).startswith((path + "/", path + ".py")) for f in files):
            return candidate.lower().replace("_", "-")
    assert len(candidates) == 1, (module, candidates)
    return candidates[0].lower().replace("_", "-")


def test_tutorial_07_install_line_brings_what_it_imports():
    nb = nbformat.read(ROOT / "notebooks" / "07_mcp_and_typed_output.ipynb", as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    (line,) = re.findall(r"pip install 'nbagent\[([a-z,]+)\]'", text)
    installed = _installed(line.split(","))
    missing = {}
    for module in sorted(_imported_modules(nb)):
        top = module.split(".")[0]
        if top in sys.stdlib_module_names or top == "nbagent":
            continue
        distribution = _distribution_of(module)
        if distribution not in installed:
            missing[module] = distribution
    assert not missing, f"`pip install 'nbagent[{line}]'` does not install {missing}"
    assert "opentelemetry.sdk.trace" in _imported_modules(nb)  # the check saw the traces cell
