"""No test, and no process a test starts, inherits a provider key or an nbagent setting
(and none looks for a model server on this machine's usual ports)."""

from __future__ import annotations

import os

from nbagent.providers import environment_variables
from tests.support.env import child_environment, never_inherited


def test_every_variable_a_provider_reads_is_kept_from_tests():
    assert set(environment_variables()) | {"NBAGENT_APPROVAL", "NBAGENT_HISTORY"} <= set(
        never_inherited()
    )
    # The one the suite sets itself: an agent without a model looks for no local server.
    assert set(never_inherited()) & set(os.environ) == {"NBAGENT_DISCOVER"}
    assert os.environ["NBAGENT_DISCOVER"] == "off"


def test_a_child_process_gets_neither_keys_nor_settings():
    shell = {
        "PATH": "/usr/bin",
        "OPENAI_API_KEY": "sk-real",
        "GOOGLE_API_KEY": "g-real",
        "NBAGENT_MODEL": "openai:gpt-4o",
        "NBAGENT_LOG": "debug",
    }
    assert child_environment(shell, NBAGENT_HOME="/tmp/h") == {
        "PATH": "/usr/bin",
        "NBAGENT_LOG": "debug",
        "NBAGENT_DISCOVER": "off",
        "NBAGENT_HOME": "/tmp/h",
    }
    assert child_environment(shell, drop_prefix="NBAGENT_", NBAGENT_MODEL="local") == {
        "PATH": "/usr/bin",
        "NBAGENT_DISCOVER": "off",
        "NBAGENT_MODEL": "local",
    }
