"""Text that cannot drive a terminal or reorder what a viewer sees.

A leaf module (no nbagent imports). Model, tool and server text reaches HTML,
Markdown, plain text, terminals and log lines; every one of those outputs passes
it through :func:`clean` (or :func:`one_line` for a log line), which turns

- ANSI/VT escape sequences and every other C0/C1 control character (bell,
  backspace, carriage return...) but newline and tab, and
- Unicode bidi controls (U+202A-U+202E, U+2066-U+2069, U+200E/U+200F, U+061C),
  which make text display in an order other than the one it is stored in,

into the visible replacement mark U+FFFD. Text without such characters is
returned unchanged (one regex scan, no copy).
"""

from __future__ import annotations

import re

__all__ = ["REPLACEMENT", "clean", "one_line"]

REPLACEMENT = "\ufffd"

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
# Character classes only (no alternation): the scan of clean text stays fast.
_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
_UNSAFE_LINE = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_BIDI}]")
_VISIBLE = {"\n": "\\n", "\r": "\\r", "\x1b": "\\x1b"}


def clean(text: str) -> str:
    """``text`` with control characters (but newline and tab) and bidi controls as U+FFFD.

    A Windows line end (CR LF) becomes a plain newline.
    """
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(REPLACEMENT, text.replace("\r\n", "\n"))


def one_line(text: str) -> str:
    """``text`` as one terminal-safe line: newlines, tabs and ESC shown as escapes."""
    if not _UNSAFE_LINE.search(text):
        return text
    text = text.replace("\r\n", "\n")
    return _UNSAFE_LINE.sub(lambda m: _VISIBLE.get(m.group(), REPLACEMENT), text)
