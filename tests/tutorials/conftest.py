"""Tutorial and demo tests: they run real kernels on the embedded model.

The kernels must use the embedded model whatever the developer has set, and the
cells that need an API key or a server must see none (they skip cleanly).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.env import child_environment
from tests.support.history import history_env

# The providers tutorial's own switch for trying an OpenAI-compatible server.
TUTORIAL_VARIABLES = ("OPENAI_COMPAT_BASE_URL",)


@pytest.fixture
def clean_env(tmp_path):
    env = child_environment(drop_prefix="NBAGENT_", NBAGENT_MODEL="local")
    for name in TUTORIAL_VARIABLES:
        env.pop(name, None)
    # The kernels import this checkout of nbagent (as tests/support/kernel.py's do),
    # not whichever copy is installed.
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return history_env(tmp_path / "home", env)  # history DB of the run, not the user's
