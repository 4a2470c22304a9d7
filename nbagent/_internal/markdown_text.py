"""Writing Markdown safely: code spans and fences that model text cannot close early.

A leaf module (no nbagent imports): the Markdown twin of a run (``render``) and
``Conversation.to_markdown`` use the same rules, so tool names, arguments and
results never turn into live Markdown.
"""

from __future__ import annotations

import re

from .safe_text import clean


def _longest_backtick_run(text: str) -> int:
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return longest


def code_fence(text: str, info: str = "") -> list[str]:
    """A code fence longer than any backtick run inside ``text`` (it cannot be closed early)."""
    text = clean(text)
    ticks = "`" * max(3, _longest_backtick_run(text) + 1)
    return [ticks + info, text, ticks]


def code_span(text: str) -> str:
    """Inline code that a backtick inside ``text`` cannot end early (CommonMark code span)."""
    text = clean(text)
    ticks = "`" * (_longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


_UNSAFE_MD_LINK = re.compile(r"(?i)(\]\s*\(\s*<?|\]:\s*<?)(javascript|vbscript|data|file)(\s*:)")


# ``![alt](url`` -> ``[alt](url``: an image the viewer would fetch becomes a link to click.
_REMOTE_IMAGE = re.compile(r"!(\[[^\]\n]*\]\s*[(\[])")


def inline_text(text: str) -> str:
    """``text`` as inert Markdown: raw HTML shows as text, unsafe link targets do not parse.

    Images become links (a Markdown viewer must not fetch what a model chose), and
    control and bidi characters become U+FFFD.
    """
    text = _REMOTE_IMAGE.sub(r"\1", clean(text))
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    # A space inside an unsafe link target stops it from parsing as a link at all.
    return _UNSAFE_MD_LINK.sub(lambda m: m.group(1) + m.group(2) + " " + m.group(3), text)
