"""Fixtures shared by the core-engine tests."""

from __future__ import annotations

import pytest

from nbagent import REGISTRY


@pytest.fixture(autouse=True)
def clean_registry():
    """Each test starts and ends with the kernel-wide registry as it found it."""
    saved = dict(REGISTRY)
    yield
    REGISTRY.clear()
    for t in saved.values():
        REGISTRY.add(t)
