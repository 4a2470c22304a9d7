"""Suite-wide safety: no test writes the user's real files, sees real keys or uses the network.

The whole session runs under a home of its own, set here, when pytest imports this
file: before any fixture, any test module's import-time code, any kernel or
JupyterLab server (they inherit it). ``HOME``, the XDG folders, ``NBAGENT_HOME``
and ``IPYTHONDIR`` all point into it. At the end, the session fails if anything
under the real home's nbagent folders changed, it says so in the summary (a warning,
not a failure: another process on the machine may share that folder; the suite's
own check is tests/core/test_session_home.py).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import network
from tests.support.env import never_inherited
from tests.support.servers import WireServer

pytest_plugins = ("pytester",)


def _real_nbagent_folders() -> list[Path]:
    """Where nbagent would write for the user (read before the switch)."""
    import platformdirs

    data = Path(platformdirs.user_data_dir("nbagent", appauthor=False))
    config = Path(platformdirs.user_config_dir("nbagent", appauthor=False))
    return [data, config, Path(os.environ.get("NBAGENT_HOME") or data)]


def _snapshot(folders: list[Path]) -> dict[str, tuple[int, int]]:
    """(size, mtime) of every file under ``folders``: what must not change."""
    found = {}
    for folder in folders:
        if folder.is_dir():
            for path in folder.rglob("*"):
                if path.is_file():
                    stat = path.stat()
                    found[str(path)] = (stat.st_size, stat.st_mtime_ns)
    return found


def _isolate_the_session() -> Path:
    home = Path(tempfile.mkdtemp(prefix="nbagent-tests-home-"))
    user_pip = Path.home() / ".config" / "pip" / "pip.conf"
    if user_pip.is_file() and "PIP_CONFIG_FILE" not in os.environ:
        os.environ["PIP_CONFIG_FILE"] = str(user_pip)  # package installs keep the user's index
    os.environ.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        NBAGENT_HOME=str(home / "nbagent"),
        IPYTHONDIR=str(home / ".ipython"),
    )
    return home


REAL_FOLDERS = _real_nbagent_folders()
"""The real home's nbagent and IPython folders, as they were before the session started."""
_REAL_BEFORE = _snapshot(REAL_FOLDERS)
SESSION_HOME = _isolate_the_session()
"""The session's own home (HOME, XDG folders, NBAGENT_HOME, IPYTHONDIR)."""


def pytest_configure(config: pytest.Config) -> None:
    # Any connection beyond this machine fails the test that opened it (loopback is fine).
    network.install(config)


def pytest_runtest_setup(item: pytest.Item) -> None:
    # Started with nohup or `cmd &`, the suite inherits SIGINT ignored: Ctrl-C cannot be
    # delivered to it (or to the children that inherit that), so those tests cannot run.
    if item.get_closest_marker("sigint") is not None and sigint_is_ignored():
        pytest.skip("SIGINT is ignored in this process (started with nohup or `&`?)")


def sigint_is_ignored() -> bool:
    """True when this process ignores SIGINT, as processes started in the background do."""
    import signal

    return signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    changed = sorted(
        set(_snapshot(REAL_FOLDERS).items()).symmetric_difference(_REAL_BEFORE.items())
    )
    if changed:
        paths = sorted({path for path, _ in changed})
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_sep("!", "nbagent files in the real home changed during the tests")
            reporter.write_line(", ".join(paths))


@pytest.fixture(autouse=True)
def _private_history_and_no_keys(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Subdirectory conftests may point NBAGENT_HOME somewhere more specific; this is the floor.
    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path_factory.mktemp("nbagent-home")))
    for name in never_inherited():
        monkeypatch.delenv(name, raising=False)
    # An agent without a model must not find a server someone runs on this machine's
    # usual ports; discovery tests name their own loopback servers through env=.
    monkeypatch.setenv("NBAGENT_DISCOVER", "off")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Playwright's sync API keeps an event loop running in the main thread while its
    # session-scoped browser lives; async tests collected after it would then fail to
    # start their own loop. Run the browser tests last.
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)


@pytest.fixture
def wire_server() -> Iterator[WireServer]:
    """A loopback server speaking the providers' wire formats (closed after the test)."""
    server = WireServer()
    try:
        yield server
    finally:
        server.close()
