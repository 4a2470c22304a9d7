"""Markdown -> HTML for model text: raw HTML shown as text, unsafe links refused.

markdown-it is imported on first use (``%load_ext nbagent`` stays cheap) and
configured once: CommonMark plus tables and strikethrough, no raw HTML, no
linkify, and every link opens in a new tab without an opener. An image becomes a
link to it (``🖼 alt``): showing the output must never make the viewer fetch a
URL a model chose (a tracking pixel carrying data in its query). Control and bidi
characters become U+FFFD before parsing.
"""

from __future__ import annotations

from typing import Any

from .._internal.safe_text import clean
from .escaping import escape

__all__ = ["render_markdown"]

_SAFE_SCHEMES = ("http:", "https:", "mailto:")
_md: Any = None


def _validate_link(url: str) -> bool:
    """Allow http(s), mailto and scheme-less (relative, #anchor) links only.

    markdown-it already refuses javascript:/vbscript:/file: but accepts some data:
    URLs; we refuse every other scheme (after stripping the whitespace and control
    characters browsers ignore, e.g. ``java<TAB>script:``).
    """
    cleaned = "".join(ch for ch in url if ch > " ").lower()
    head = cleaned.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    if ":" not in head:
        return True
    return cleaned.startswith(_SAFE_SCHEMES)


def _markdown() -> Any:
    global _md
    if _md is None:
        from markdown_it import MarkdownIt

        md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
        md.enable(["table", "strikethrough"])
        md.validateLink = _validate_link  # type: ignore[method-assign]

        def link_open(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
            # A click must not navigate the notebook page away, nor hand it an opener.
            tokens[idx].attrSet("target", "_blank")
            tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
            return str(renderer.renderToken(tokens, idx, options, env))

        def image(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
            token = tokens[idx]
            alt = renderer.renderInlineAsText(token.children or [], options, env) or "image"
            return (
                f'<a class="nba-image-link" href="{escape(token.attrGet("src") or "")}" '
                'target="_blank" rel="noopener noreferrer nofollow" '
                f'title="image (not loaded)">🖼 {escape(alt)}</a>'
            )

        md.add_render_rule("link_open", link_open)
        md.add_render_rule("image", image)
        _md = md
    return _md


def render_markdown(text: str) -> str:
    """Markdown -> HTML with raw HTML shown as text and unsafe links left as plain text."""
    return str(_markdown().render(clean(text or "")))
