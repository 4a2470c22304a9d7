"""Started with SIGINT ignored (nohup, ``cmd &``), the suite skips the Ctrl-C tests.

Such a process cannot receive Ctrl-C, so a test that interrupts itself would fail
with "DID NOT RAISE KeyboardInterrupt"; it is skipped, with the reason, instead.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SELF_INTERRUPT = """
import _thread, time
import pytest

@pytest.mark.sigint
def test_ctrl_c():
    with pytest.raises(KeyboardInterrupt):
        _thread.interrupt_main()
        time.sleep(1)
"""


@pytest.mark.parametrize("ignored", [True, False])
def test_ctrl_c_tests_skip_with_a_reason_when_sigint_is_ignored(
    tmp_path: Path, ignored: bool
) -> None:
    (tmp_path / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    sigint: sends SIGINT\n")
    (tmp_path / "test_self_interrupt.py").write_text(SELF_INTERRUPT)

    def start() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN if ignored else signal.SIG_DFL)

    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-rs", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")},
        preexec_fn=start,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if ignored:
        assert "1 skipped" in done.stdout, done.stdout
        assert "SIGINT is ignored in this process (started with nohup or `&`?)" in done.stdout
    else:
        assert "1 passed" in done.stdout, done.stdout
