"""The chat widget's former home: :class:`ChatWidget` now lives in :mod:`nbagent.chat`."""

from __future__ import annotations

from .chat import ChatWidget

__all__ = ["ChatWidget"]
