"""Fixtures for ``%%agent`` / ``%agent``: a real IPython shell, and real kernels.

``shell`` is a fresh InteractiveShell with nbagent loaded whose display publisher
keeps every display and update (what a front end would receive). Kernels come
from ``tests/support/kernel.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.kernel import shared_kernel  # noqa: F401 - a fixture


@pytest.fixture
def shell() -> Iterator[Any]:
    """A fresh real IPython InteractiveShell with nbagent loaded."""
    from IPython.core.displaypub import CapturingDisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell

    import nbagent

    InteractiveShell.clear_instance()
    sh = InteractiveShell.instance()
    # What a front end would receive: every display and update_display, in order.
    sh.display_pub = CapturingDisplayPublisher()
    sh.run_line_magic("load_ext", "nbagent")
    saved = dict(nbagent.REGISTRY)
    nbagent.REGISTRY.clear()
    yield sh
    nbagent.REGISTRY.clear()
    for t in saved.values():
        nbagent.REGISTRY.add(t)
    InteractiveShell.clear_instance()
