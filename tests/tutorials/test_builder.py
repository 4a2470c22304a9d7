"""The stored tutorials are what notebooks/build.py writes (edit the builder, not the JSON)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILDER = ROOT / "notebooks" / "build.py"


def check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BUILDER), "--check", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_stored_tutorial_has_the_builders_cells():
    done = check()
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_the_check_names_a_tutorial_that_drifted(tmp_path):
    # A copy of the builder next to an edited notebook: the check must notice the edit.
    copy = tmp_path / "build.py"
    copy.write_text(BUILDER.read_text(encoding="utf-8"), encoding="utf-8")
    stored = (ROOT / "notebooks" / "05_chat_widget.ipynb").read_text(encoding="utf-8")
    edited = stored.replace("Stop ends a reply mid-stream", "Stop ends a reply", 1)
    assert edited != stored
    (tmp_path / "05_chat_widget.ipynb").write_text(edited, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(copy), "--check", "05_chat_widget.ipynb"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stdout == (
        "05_chat_widget.ipynb is not what notebooks/build.py writes: rebuild it with --execute\n"
    )
