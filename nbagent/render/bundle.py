"""Display bundles: the HTML with its Markdown and plain-text twins, for ``display()``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .markdown import render_result_markdown
from .panels import render_result_html
from .text import render_result_text

if TYPE_CHECKING:
    from ..results import RunResult

__all__ = ["mime_bundle", "result_mime_bundle"]


def mime_bundle(html_text: str, markdown_text: str, plain_text: str) -> dict[str, str]:
    """A display bundle with the HTML and its two twins (``display(bundle, raw=True)``)."""
    return {"text/html": html_text, "text/markdown": markdown_text, "text/plain": plain_text}


def result_mime_bundle(result: RunResult) -> dict[str, str]:
    """The final rendering of a run as a display bundle (``RunResult``'s rendering hook)."""
    return mime_bundle(
        render_result_html(result), render_result_markdown(result), render_result_text(result)
    )
