"""Fixtures for the ecosystem tests: a real kernel (``tests/support/kernel.py``)."""

from __future__ import annotations

from tests.support.kernel import shared_kernel  # noqa: F401 - a fixture
