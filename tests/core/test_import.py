"""``import nbagent`` stays light, and the public API is what ``__all__`` says."""

from __future__ import annotations

import json
import subprocess
import sys
import types

import nbagent


def test_import_does_not_pull_heavy_or_optional_modules():
    code = "import json, sys; import nbagent; print(json.dumps(sorted(m for m in sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    loaded = set(json.loads(out))
    for heavy in ("pandas", "numpy", "ipywidgets", "IPython", "pydantic", "httpx"):
        assert heavy not in loaded, heavy
    adapters = {m for m in loaded if m.startswith("nbagent.providers.")}
    assert adapters <= {"nbagent.providers.base"}, adapters
    for private in ("nbagent.magic", "nbagent.widget", "nbagent.render", "nbagent.store"):
        assert private not in loaded, private
    # The optional extras (mcp, otel, cost, ray, dask) and nbagent's modules over them load
    # on use.
    for optional in ("mcp", "opentelemetry", "genai_prices", "nbagent.mcp", "nbagent.run.output",
                     "nbagent.cost", "nbagent.tracing", "ray", "dask", "distributed",
                     "cloudpickle", "nbagent.batch.distributed"):  # fmt: skip
        assert not any(m == optional or m.startswith(optional + ".") for m in loaded), optional


def _public_names(module: types.ModuleType) -> list[str]:
    """Every public attribute, as httpx checks: not private or dunder, not a module,
    not the ``annotations`` feature object of ``from __future__ import annotations``."""
    return [
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and name != "annotations"
    ]


def _isort_order(name: str) -> tuple[int, str]:
    # CONSTANTS, then Classes, then functions, as ruff's RUF022 sorts __all__.
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_all_is_exactly_the_public_api_sorted():
    assert nbagent.__all__ == sorted(_public_names(nbagent), key=_isort_order)
    # Lazily loaded (ipywidgets is an optional extra): reachable, not star-exported.
    assert "ChatWidget" in dir(nbagent)
    from nbagent import Agent, RunResult, tool  # the contract in the issue

    assert callable(tool) and Agent and RunResult
    assert callable(nbagent.load_ipython_extension)
