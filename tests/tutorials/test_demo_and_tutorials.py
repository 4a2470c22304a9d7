"""`nbagent demo` and every tutorial, each run in a fresh process with a real kernel."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"

pytestmark = [pytest.mark.kernel, pytest.mark.local_model]

TUTORIALS = sorted(p.name for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def demo_command() -> list[str]:
    # The console script the README uses when it is installed, else the same entry point.
    script = shutil.which("nbagent")
    return [script] if script else [sys.executable, "-m", "nbagent.cli"]


@pytest.mark.timeout(900)
def test_demo_writes_notebook_html_and_prints_the_transcript(tmp_path, clean_env):
    out = tmp_path / "demo-out"
    proc = subprocess.run(
        [*demo_command(), "demo", "--out", str(out)],
        cwd=tmp_path,  # the notebook is found next to the package, not in the cwd
        env=clean_env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = proc.stdout
    # Progress lines, then the transcript of the %%agent cell: round, call, answer, footer.
    assert "loading the embedded model, then asking: Check the current weather in Oslo." in text
    assert "▸ Round 1 · get_weather · ok" in text
    assert 'get_weather(city="Oslo") -> ok' in text
    # The answers say what the tool returned, and nothing contrary to it (issue 20.4).
    assert 'get_weather(city="Oslo") returned: 4 °C, light snow' in text
    assert 'get_weather(city="Berlin") returned: 11 °C, cloudy' in text
    assert "sunny" not in text
    # The footer names the model and, when nbagent chose it, why (issue 20.2).
    assert re.search(r"— local( \([^)]*\))? · 1 round", text)
    # The later Agent.run_sync cell prints in the same plain form (not Markdown, not a repr).
    assert text.count("▸ Round 1 · get_weather") == 2
    assert "**Round" not in text and "RunResult(" not in text
    assert f"wrote {out / '01_quickstart.ipynb'}" in text and "done in" in text

    executed = nbformat.read(out / "01_quickstart.ipynb", as_version=4)
    code = [c for c in executed.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code)
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    agent_cell = next(c for c in code if c.source.startswith("%%agent"))
    # The run's display (the first model load also prints its progress).
    html = next(o for o in agent_cell.outputs if "text/html" in o.get("data", {})).data["text/html"]
    assert "nbagent" in html and "get_weather" in html

    exported = (out / "01_quickstart.html").read_text(encoding="utf-8")
    assert "<html" in exported and "get_weather" in exported and "4 °C, light snow" in exported


def test_demo_reports_a_missing_notebook_clearly(tmp_path, clean_env):
    proc = subprocess.run(
        [*demo_command(), "demo", "--notebook", str(tmp_path / "nope.ipynb")],
        env=clean_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "no notebook at" in proc.stderr and "Traceback" not in proc.stderr


def test_every_tutorial_is_run():
    names = set(TUTORIALS)
    assert {
        "01_quickstart.ipynb",
        "02_tools_and_dataframes.ipynb",
        "03_providers.ipynb",
        "04_limits_errors_and_approval.ipynb",
        "05_chat_widget.ipynb",
    } <= names
    for name in TUTORIALS:  # checked outputs exist, so nbval compares something real
        nb = json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))
        checked = [
            c for c in nb["cells"] if "nbval-check-output" in c.get("metadata", {}).get("tags", [])
        ]
        assert checked and all(c["outputs"] for c in checked), name


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", TUTORIALS)
def test_tutorial_runs_under_nbval(name, clean_env):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--nbval-lax",
            "-p",
            "no:cacheprovider",
            "-q",
            "--timeout=600",
            str(NOTEBOOKS / name),
        ],
        cwd=ROOT,
        env=clean_env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout and "failed" not in proc.stdout


def test_version_matches_the_package_metadata(tmp_path, clean_env):
    import re

    found = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert found is not None
    expected = found.group(1)
    proc = subprocess.run(
        [*demo_command(), "--version"], env=clean_env, capture_output=True, text=True, timeout=60
    )
    assert (proc.returncode, proc.stdout) == (0, expected + "\n")
