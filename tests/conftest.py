"""Suite-wide safety: no test writes the user's real history, sees real keys or uses the network."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import network
from tests.support.env import never_inherited
from tests.support.servers import WireServer

pytest_plugins = ("pytester",)


def pytest_configure(config: pytest.Config) -> None:
    # Any connection beyond this machine fails the test that opened it (loopback is fine).
    network.install(config)


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
