"""The project's own checks, so CI fails when lint or types regress."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "check", "."],
        ["ruff", "format", "--check", "."],
        [sys.executable, "-m", "mypy"],
    ],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_project_checks_are_clean(command: list[str]) -> None:
    if command[0] == "ruff":
        command = [shutil.which("ruff") or "ruff", *command[1:]]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
