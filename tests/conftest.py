"""Suite-wide safety: no test writes the user's real history, and no test sees real keys."""

from __future__ import annotations

import pytest

_KEY_VARS = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_AUTH_TOKEN",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OLLAMA_HOST",
    "NBAGENT_MODEL",
)


@pytest.fixture(autouse=True)
def _private_history_and_no_keys(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Subdirectory conftests may point NBAGENT_HOME somewhere more specific; this is the floor.
    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path_factory.mktemp("nbagent-home")))
    for name in _KEY_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Playwright's sync API keeps an event loop running in the main thread while its
    # session-scoped browser lives; async tests collected after it would then fail to
    # start their own loop. Run the browser tests last.
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)
