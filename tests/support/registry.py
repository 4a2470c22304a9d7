"""The kernel-wide tool registry, emptied for a test and given back afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from nbagent import REGISTRY
from nbagent.tools.tool import ToolRegistry


@contextmanager
def empty_registry() -> Iterator[ToolRegistry]:
    """``REGISTRY`` with no tools inside the block (other tests' ``@tool`` stay out)."""
    saved = dict(REGISTRY)
    REGISTRY.clear()
    try:
        yield REGISTRY
    finally:
        REGISTRY.clear()
        for tool in saved.values():
            REGISTRY.add(tool)
