"""``import nbagent`` stays light, and the public API is what ``__all__`` says."""

from __future__ import annotations

import json
import subprocess
import sys

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


def test_public_names():
    for name in nbagent.__all__:
        assert hasattr(nbagent, name), name
    from nbagent import Agent, RunResult, tool  # the contract in the issue

    assert callable(tool) and Agent and RunResult
    assert callable(nbagent.load_ipython_extension)
