"""The chat surface: :class:`ChatWidget`, an anywidget with an ES module front end.

``chat.js`` and ``chat.css`` ship beside this file as package data; there is no
build step. The Python side is the seam: every button and key in the front end
sends one message that calls the public method of the same name.
"""

from __future__ import annotations

from .widget import ChatWidget

__all__ = ["ChatWidget"]
