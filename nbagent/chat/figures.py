"""Attach a figure by name: a matplotlib ``Figure`` in the kernel, sent as a PNG image.

Suggesting a figure runs no user code: a value is a figure when its type is a subclass
of matplotlib's ``Figure``, asked only when matplotlib is already imported (a value
of a type that matplotlib never loaded cannot be one). Rendering it draws the
figure, which runs the figure's artists: that happens only when the user picks it,
in the handler of that widget message, on the kernel's main thread.
"""

from __future__ import annotations

import sys
from typing import Any

from .._internal.images import Image, to_image

THUMBNAIL_SIDE = 64
"""Longest side, in pixels, of an attachment's thumbnail in the page."""


def is_figure(value: Any) -> bool:
    """True for a matplotlib ``Figure`` (its type only: no property or ``__class__`` read)."""
    module = sys.modules.get("matplotlib.figure")
    figure_type = getattr(module, "Figure", None) if module is not None else None
    return isinstance(figure_type, type) and issubclass(type(value), figure_type)


def figure_image(namespace: dict[str, Any], name: str) -> Image:
    """Render the figure the kernel variable ``name`` holds as a model-ready PNG.

    Raises:
        ValueError: ``name`` is not defined, or holds something other than a figure.
    """
    if name not in namespace:
        raise ValueError(f"figure not attached: {name!r} is not defined in the notebook")
    value = namespace[name]
    if not is_figure(value):
        raise ValueError(f"figure not attached: {name!r} is not a matplotlib Figure")
    try:
        return to_image(value)
    except (TypeError, ValueError) as error:  # e.g. a Figure subclass defined in the notebook
        raise ValueError(f"figure not attached: {error}") from None


def thumbnail(image: Image) -> str:
    """A small ``data:`` URL of ``image`` for its chip, or "" without Pillow to shrink it."""
    try:
        small = to_image(image, max_side=THUMBNAIL_SIDE)
    except (TypeError, ValueError, ImportError):
        return ""
    if max(small.width, small.height) > THUMBNAIL_SIDE:
        return ""  # not shrunk (no Pillow): the chip shows its label alone
    return small.data_url()
