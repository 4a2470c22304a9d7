"""The code of a ``run_python``/``propose_cell`` call, shown for an approval question.

Every surface shows the code *before* it runs: the cell (HTML with a plain-text
twin), the terminal (ANSI colours) and the ChatWidget (HTML). The user approves
exactly what runs, so the code is shown whole (a scrollable box), never cut; code
too long to show (:data:`MAX_APPROVAL_CHARS`) is refused without asking (see
:func:`refusal`). Control and bidi characters, which could make the code read
differently from what runs, are shown as visible ``⟦U+202E⟧`` marks everywhere the
code is shown, and the question names the code's length and SHA-256
(:func:`fingerprint`). Pygments comes with IPython; without it the code is plain.
"""

from __future__ import annotations

import hashlib
import html
import re
from typing import Any

__all__ = [
    "CODE_TOOLS",
    "MAX_APPROVAL_CHARS",
    "approval_bundle",
    "code_ansi",
    "code_html",
    "code_of",
    "fingerprint",
    "refusal",
    "visible_code",
]

CODE_TOOLS = ("run_python", "propose_cell")
MAX_APPROVAL_CHARS = 200_000
"""Longest code an approval question shows (about 4,000 lines); longer code is refused."""

# C0/C1 controls but newline and tab, and the format characters that reorder or hide
# text: bidi embeddings, overrides and isolates, zero-width characters, the BOM.
_HIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\u27e6\ue000-\uf8ff]"
)  # and the mark's own bracket (a mark in the code cannot pass for one), private use
_SENTINEL = "\ue000"  # stands for a hidden character while pygments highlights
_STYLE = "border-left:3px solid #d9822b;padding:2px 8px;margin:4px 0;overflow:auto;max-height:60vh"
_MARK_STYLE = "background:#fde2e2;color:#a40000;border-radius:2px"


def code_of(call: Any) -> str | None:
    """The code a call would run or propose (whole), or None for other calls."""
    if getattr(call, "name", None) not in CODE_TOOLS:
        return None
    code = (getattr(call, "arguments", None) or {}).get("code")
    return code if isinstance(code, str) else None


def refusal(call: Any) -> str | None:
    """Why ``call`` is refused without asking (its code is too long to show), else None."""
    code = code_of(call)
    if code is None or len(code) <= MAX_APPROVAL_CHARS:
        return None
    return (
        f"nbagent, unasked: the code is {len(code):,} characters, more than the "
        f"{MAX_APPROVAL_CHARS:,} an approval question shows whole"
    )


def fingerprint(code: str) -> str:
    """``1,234 characters, 40 lines, sha256 3f2a…`` (what the question names)."""
    digest = hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    lines = code.count("\n") + (0 if code.endswith("\n") or not code else 1)
    hidden = len(_HIDDEN.findall(code))
    marks = f", {hidden:,} hidden characters marked" if hidden else ""
    return f"{len(code):,} characters, {lines:,} lines{marks}, sha256 {digest}"


def _mark(character: str) -> str:
    return f"⟦U+{ord(character):04X}⟧"


def visible_code(code: str) -> str:
    """``code`` with each control, bidi or invisible character as a visible ``⟦U+XXXX⟧``."""
    return _HIDDEN.sub(lambda m: _mark(m.group()), code)


def code_html(code: str) -> str:
    """The code as highlighted, self-contained HTML (inline styles, no script), whole.

    Hidden characters become visible, highlighted marks (replaced before highlighting:
    pygments would turn a lone carriage return into a line break).
    """
    hidden = _HIDDEN.findall(code)
    code = _HIDDEN.sub(_SENTINEL, code)
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        body = f"<pre>{html.escape(code)}</pre>"
    else:
        formatter = HtmlFormatter(noclasses=True, nobackground=True)
        body = highlight(code, PythonLexer(stripnl=False), formatter)
    marks = iter(hidden)  # pygments keeps the text's order
    body = re.sub(
        _SENTINEL, lambda _m: f'<span style="{_MARK_STYLE}">{_mark(next(marks))}</span>', body
    )
    return f'<div class="nbagent-approval-code" style="{_STYLE}">{body}</div>'


def approval_bundle(code: str) -> dict[str, str]:
    """The code as a display bundle: highlighted HTML and its plain-text twin, both whole."""
    return {
        "text/plain": visible_code(code),  # the question below names its length and hash
        "text/html": code_html(code)
        + f'<div style="font-size:85%;opacity:.8">{html.escape(fingerprint(code))}</div>',
    }


def code_ansi(code: str) -> str:
    """The code with terminal colours (plain without pygments); hidden characters marked."""
    code = visible_code(code)
    try:
        from pygments import highlight
        from pygments.formatters import TerminalFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        return code
    return str(highlight(code, PythonLexer(stripnl=False), TerminalFormatter()))
