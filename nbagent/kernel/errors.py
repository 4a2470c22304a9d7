"""``last_error``: the last exception raised in the kernel, with the cell that raised it."""

from __future__ import annotations

import linecache
import sys
import traceback
from typing import Any

from .._internal.values import cut_middle
from .namespace import KernelView

__all__ = ["last_error_text", "trimmed_traceback"]

KEEP_FRAMES = 6
"""Frames kept of a long traceback: the first (the cell) and the last ones (where it broke)."""
ERROR_CHARS = 3_000


def trimmed_traceback(error: BaseException, *, skip_files: tuple[str, ...] = ()) -> str:
    """``error``'s traceback with nbagent's own frames dropped and the middle cut."""
    frames = [
        f for f in traceback.extract_tb(error.__traceback__) if not f.filename.endswith(skip_files)
    ]
    if len(frames) > KEEP_FRAMES:
        cut = len(frames) - KEEP_FRAMES
        lines = traceback.format_list(frames[:1])
        lines.append(f"  … {cut} frames cut …\n")
        lines += traceback.format_list(frames[-(KEEP_FRAMES - 1) :])
    else:
        lines = traceback.format_list(frames)
    text = "Traceback (most recent call last):\n" + "".join(lines)
    text += "".join(traceback.format_exception_only(type(error), error))
    return cut_middle(text, ERROR_CHARS)[0]


def _cell_of(error: BaseException, view: KernelView) -> tuple[int | None, str | None]:
    """The execution count and source of the cell the error came from, if known."""
    history: Any = view.ns.get("In") or view.ns.get("_ih")
    tb = error.__traceback__
    filenames = []
    while tb is not None:
        filenames.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    fallback: str | None = None
    for filename in filenames:
        source = "".join(linecache.getlines(filename))
        if not source:
            continue
        if isinstance(history, list):
            for number in range(len(history) - 1, 0, -1):
                if history[number] and history[number].strip() == source.strip():
                    return number, source
        if fallback is None and ("ipykernel_" in filename or filename.startswith("<ipython")):
            fallback = source
    return None, fallback


def last_error_text(view: KernelView) -> str:
    """What ``last_error`` tells the model."""
    error = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    if not isinstance(error, BaseException):
        return "No exception has been raised in the kernel yet."
    if error.__traceback__ is None and getattr(sys, "last_traceback", None) is not None:
        error = error.with_traceback(sys.last_traceback)
    number, source = _cell_of(error, view)
    parts = []
    if source is not None:
        label = f"In [{number}]" if number is not None else "The code that raised"
        parts.append(f"{label}:\n{cut_middle(source.rstrip(), 2_000)[0]}")
    parts.append(f"{type(error).__name__}: {error}")
    parts.append(trimmed_traceback(error))
    return "\n\n".join(parts)
