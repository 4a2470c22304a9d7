"""The one HTML escaping rule of the package.

Every string a model or a tool produced goes through :func:`escape` (or through
:func:`~nbagent.render.render_markdown`, which shows raw HTML as text) before it
becomes HTML. Only markup written in ``nbagent.render`` is emitted unescaped.
"""

from __future__ import annotations

import html
from typing import Any

__all__ = ["escape"]


def escape(text: Any) -> str:
    """``text`` as HTML text or attribute value (quotes escaped too)."""
    return html.escape(str(text), quote=True)
