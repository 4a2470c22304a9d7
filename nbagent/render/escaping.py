"""The one HTML escaping rule of the package.

Every string a model or a tool produced goes through :func:`escape` (or through
:func:`~nbagent.render.render_markdown`, which shows raw HTML as text) before it
becomes HTML; both neutralise control and bidi characters. Only markup written
in ``nbagent.render`` is emitted unescaped.
"""

from __future__ import annotations

import html
from typing import Any

from .._internal.safe_text import clean

__all__ = ["escape"]


def escape(text: Any) -> str:
    """``text`` as HTML text or attribute value (quotes escaped too).

    Control and bidi characters become U+FFFD first (:func:`nbagent._internal.safe_text.clean`).
    """
    return html.escape(clean(str(text)), quote=True)
