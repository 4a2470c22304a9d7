"""Tutorial and demo tests: they run real kernels on the embedded model.

The kernels must use the embedded model whatever keys the developer has set, and
the cells that need an API key must see none (they skip cleanly).
"""

from __future__ import annotations

import os

import pytest

KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")


@pytest.fixture
def clean_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in KEYS and not k.startswith("NBAGENT_")}
    env["NBAGENT_MODEL"] = "local"
    env["NBAGENT_HOME"] = str(tmp_path / "home")  # history DB of the run, not the user's
    return env
