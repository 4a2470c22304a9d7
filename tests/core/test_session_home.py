"""The test session runs under a home of its own: the user's files stay untouched.

The suite's conftest switches HOME, the XDG folders, NBAGENT_HOME and IPYTHONDIR
when pytest imports it, before fixtures, test modules and the processes tests start.
Here a pytest session runs in a child process with a throwaway "real" home and does
what used to leak: a run at import time, a run in a session fixture, a run in a
child process (as kernels and the JupyterLab server are). The home must stay empty.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

LEAKY = """
import os, subprocess, sys
import pytest
from nbagent import Agent
from nbagent.testing import ScriptedModel

RUN = "from nbagent import Agent\\nfrom nbagent.testing import ScriptedModel\\n" \\
      "Agent(ScriptedModel(['hi'])).run_sync('{}')"

exec(RUN.format("at import time"))

@pytest.fixture(scope="session")
def early():
    exec(RUN.format("in a session fixture"))

def test_runs_everywhere(early):
    exec(RUN.format("in a test"))
    subprocess.run([sys.executable, "-c", RUN.format("in a child process")], check=True)
    print("HOME", os.environ["HOME"])
"""


def test_a_session_leaves_the_real_home_untouched(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_home = tmp_path / "real-home"
    real_home.mkdir()
    # The child session starts as a developer's shell would: their home, nothing set.
    monkeypatch.setenv("HOME", str(real_home))
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME",
                 "NBAGENT_HOME", "IPYTHONDIR", "PIP_CONFIG_FILE"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    pytester.makeconftest((ROOT / "tests" / "conftest.py").read_text(encoding="utf-8"))
    pytester.makepyfile(test_leaky=LEAKY)
    result = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert sorted(str(p.relative_to(real_home)) for p in real_home.rglob("*")) == []
    (session_home,) = [Path(m) for m in re.findall(r"HOME (\S+)", "\n".join(result.outlines))]
    assert session_home != real_home
    # the runs before any test went to the session's own history (the test's to its own)
    from nbagent.store import Store

    store = Store(session_home / "nbagent" / "history.db")
    titles = sorted(store.history(all=True, limit=10)["title"])
    assert titles == ["at import time", "in a session fixture"], titles
