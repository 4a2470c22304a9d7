"""The code of a ``run_python``/``propose_cell`` call, highlighted for an approval question.

Every surface shows the code *before* it runs: the cell (HTML), the terminal
(ANSI colours) and the ChatWidget (HTML). Pygments comes with IPython; without
it the code is shown plain.
"""

from __future__ import annotations

import html
from typing import Any

__all__ = ["CODE_TOOLS", "code_of", "code_html", "code_ansi"]

CODE_TOOLS = ("run_python", "propose_cell")
MAX_CODE_CHARS = 20_000


def code_of(call: Any) -> str | None:
    """The code a call would run or propose, or None for other calls."""
    if getattr(call, "name", None) not in CODE_TOOLS:
        return None
    code = (getattr(call, "arguments", None) or {}).get("code")
    if not isinstance(code, str):
        return None
    return code if len(code) <= MAX_CODE_CHARS else code[:MAX_CODE_CHARS] + "\n# … cut …"


def code_html(code: str) -> str:
    """The code as highlighted, self-contained HTML (inline styles, no script)."""
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        body = f"<pre>{html.escape(code)}</pre>"
    else:
        formatter = HtmlFormatter(noclasses=True, nobackground=True)
        body = highlight(code, PythonLexer(), formatter)
    style = "border-left:3px solid #d9822b;padding:2px 8px;margin:4px 0;overflow:auto"
    return f'<div class="nbagent-approval-code" style="{style}">{body}</div>'


def code_ansi(code: str) -> str:
    """The code with terminal colours (plain without pygments)."""
    try:
        from pygments import highlight
        from pygments.formatters import TerminalFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        return code
    return str(highlight(code, PythonLexer(), TerminalFormatter()))
