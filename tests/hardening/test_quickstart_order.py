"""The README's two commands in order leave the checkout green.

Issue 10, item 11: ``nbagent demo`` wrote ``nbagent-demo/`` into the checkout,
and the lint step that follows (``ruff check .`` / ``ruff format --check .``, run
by ``.ci/run`` after ``python -m pytest``) then failed on the generated notebook.
Here a scratch checkout (a git repository with this project's ``pyproject.toml``)
gets the demo's real output, from a real ``python -m nbagent.cli demo`` with a
real kernel, then the lint step and ``git status`` run in it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.kernel

# Code a linter rejects (unused import, two statements on a line, odd spacing).
CELL = "import os\nx=1;y=2\nprint( x+y )\n"


def run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
    )


def test_demo_then_lint_leaves_the_checkout_green(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    shutil.copy(ROOT / "pyproject.toml", checkout / "pyproject.toml")
    (checkout / "ok.py").write_text('"""A module."""\n\nVALUE = 1\n')
    for command in (
        ["git", "init", "-q"],
        ["git", "add", "-A"],
        ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-qm", "base"],
    ):
        assert run(command, checkout).returncode == 0
    source = tmp_path / "source" / "tiny.ipynb"
    source.parent.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(CELL)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(nb, source)

    # 1. the README's first command: the demo, run from the checkout
    demo = run(
        [sys.executable, "-m", "nbagent.cli", "demo", "--notebook", str(source), "--model",
         "openai:gpt-test"],
        checkout,
        NBAGENT_HOME=str(tmp_path / "home"),
    )  # fmt: skip
    assert demo.returncode == 0, demo.stdout + demo.stderr
    written = checkout / "nbagent-demo" / "tiny.ipynb"
    assert written.is_file() and (checkout / "nbagent-demo" / "tiny.html").is_file()

    # 2. the lint step that follows the suite in .ci/run
    for lint in (["ruff", "check", "."], ["ruff", "format", "--check", "."]):
        done = run([sys.executable, "-m", *lint], checkout)
        assert done.returncode == 0, (lint, done.stdout + done.stderr)
    # ... and git sees nothing new: the output folder ignores itself
    status = run(["git", "status", "--porcelain", "--untracked-files=all"], checkout)
    assert status.returncode == 0 and status.stdout == "", status.stdout
    # the suite does not collect anything from it either
    collected = run([sys.executable, "-m", "pytest", "--collect-only", "-q", "."], checkout)
    assert "nbagent-demo" not in collected.stdout, collected.stdout
