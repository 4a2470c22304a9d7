"""Tool results that carry images: a figure a tool returned, the plots ``run_python`` drew.

:func:`with_images` is called once per result, in call order, after the result's
text was made: it attaches the images (downscaled, see :mod:`nbagent._internal.images`) and
charges them to what is left of the round's budget. An image that no longer fits,
or that cannot be converted, is named in the text instead of sent.
"""

from __future__ import annotations

from typing import Any

from .._internal.images import Image, is_image_like, to_image
from .._internal.values import cut_middle
from ..messages import ToolResult


def images_of(value: Any) -> tuple[list[Image], list[str]]:
    """The images ``value`` carries, and a note for each one that could not be converted.

    An image-like value is one image; an object with a ``model_images`` list (what
    ``run_python`` returns) carries those.
    """
    if value is None or type(value) in (str, int, float, bool):  # a str subclass may carry some
        return [], []
    candidates: list[Any]
    if is_image_like(value):
        candidates = [value]
    else:
        carried = getattr(value, "model_images", None)
        if not isinstance(carried, (list, tuple)):
            return [], []
        candidates = list(carried)
    images: list[Image] = []
    notes: list[str] = []
    for candidate in candidates:
        try:
            images.append(to_image(candidate))
        except (TypeError, ValueError, OSError, MemoryError) as exc:
            notes.append(f"[image not sent: {exc}]")
    return images, notes


_PLAIN = frozenset({str, int, float, bool, type(None), dict, list, tuple})


def may_carry_images(value: Any) -> bool:
    """False for plain values (exact built-in types), which need no look off the loop.

    Only the type is checked, so no user code runs: most tool results skip the worker
    thread that :func:`with_images` needs for anything else.
    """
    return type(value) not in _PLAIN


def with_images(result: ToolResult, value: Any, limit: int, budget: int) -> int:
    """Attach ``value``'s images to ``result`` within ``budget``; returns the budget left.

    A value with a ``model_text(limit)`` method (``run_python``'s output) gives the
    result's text itself; a bare image's text names the image.
    """
    if not result.ok:
        return budget
    if hasattr(value, "result_value"):  # run_python: a DataFrame value stays a DataFrame
        result.value = value.result_value
    text_of = getattr(value, "model_text", None)
    if callable(text_of) and not is_image_like(value):
        try:
            text = str(text_of(limit))
        except Exception as exc:  # noqa: BLE001 - a broken object must not kill the run
            text = f"<{type(value).__name__}: unprintable ({exc})>"
        old = len(result.content)
        result.content, cut = cut_middle(text, limit)
        result.truncated = result.truncated or cut
        budget -= len(result.content) - old
    images, notes = images_of(value)
    if not images and not notes:
        return budget
    lines: list[str] = []
    for number, image in enumerate(images, start=1):
        if image.cost <= budget:
            result.images.append(image)
            budget -= image.cost
            lines.append(f"[image {number}: {image.describe()}, attached]")
        else:
            lines.append(f"[image {number}: {image.describe()}, not sent: round budget spent]")
    lines += notes
    if is_image_like(value):
        result.content = "\n".join(lines)
    else:
        result.content = "\n".join([result.content, *lines] if result.content else lines)
    return budget
