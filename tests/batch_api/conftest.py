"""Fixtures for the batch-mode tests: the magic tests' real IPython shell."""

from __future__ import annotations

from tests.magic.conftest import shell  # noqa: F401 - a fixture
