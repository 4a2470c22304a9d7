"""Events and rounds -> HTML, Markdown and plain text.

No IPython here: the ``%%agent`` magic, terminal IPython and the ``ChatWidget``
all render through this package, and so does ``RunResult``'s display
(:func:`result_mime_bundle`).

Security rule: every string a model or a tool produced goes through
:func:`escape` (or :func:`render_markdown`, with raw HTML off and unsafe link
schemes refused) before it becomes HTML, and through :func:`terminal_safe`
before it reaches a terminal. Only markup written in this package is emitted
unescaped.

One concern per module:

- ``css``: the scoped stylesheet and the root wrapper
- ``escaping``: the one HTML escaping rule
- ``markdown_html``: Markdown -> safe HTML (model text, answers)
- ``arguments``: the one argument formatter (panels, twins, terminal, approval questions)
- ``summary``: the shared words (durations, round summaries, call states, footers)
- ``values``: a tool's return value -> HTML (DataFrame table, image, JSON, text)
- ``panels``: one ``<details>`` panel per round; a whole run as HTML
- ``markdown``: the Markdown twin
- ``text``: the plain-text twin and the terminal filter
- ``bundle``: display bundles (HTML + twins)
- ``transcript``: :class:`Transcript`, the live view built from events
"""

from __future__ import annotations

from .arguments import APPROVAL_LIMIT, arguments_text, call_signature
from .bundle import mime_bundle, result_mime_bundle
from .css import CSS, ROOT_CLASS
from .escaping import escape
from .markdown import render_result_markdown
from .markdown_html import render_markdown
from .panels import render_result_body_html, render_result_html, render_round_html
from .summary import duration_text, footer_text, round_summary
from .text import render_result_text, terminal_safe
from .transcript import Transcript
from .values import render_value_html

__all__ = [
    "APPROVAL_LIMIT",
    "CSS",
    "ROOT_CLASS",
    "Transcript",
    "arguments_text",
    "call_signature",
    "duration_text",
    "escape",
    "footer_text",
    "mime_bundle",
    "render_markdown",
    "render_result_body_html",
    "render_result_html",
    "render_result_markdown",
    "render_result_text",
    "render_round_html",
    "render_value_html",
    "result_mime_bundle",
    "round_summary",
    "terminal_safe",
]
