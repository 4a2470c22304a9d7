"""The code of a ``run_python`` or ``propose_cell`` call, shown once in a chat turn.

A round panel (:mod:`nbagent.render`) shows a call's arguments as JSON, so a code
call's code read there as one escaped string, while the approval row under the
transcript showed it highlighted. In a chat turn the panel shows that code as the
same highlighted block instead (the call's other arguments stay JSON); while the
call waits for approval, the panel leaves the code to the approval row and says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Container, Iterable

from ..kernel.display import code_html, code_of
from ..messages import ToolCall
from ..render import escape
from ..render.arguments import arguments_text

_LABEL = '<div class="nba-note">arguments</div>'
"""What a round panel writes before a call's arguments (``render.panels``)."""
IN_APPROVAL = '<div class="nba-note">code: shown with the approval question below</div>'
"""What a panel says in place of the code while the call waits for approval."""


def show_code_once(
    html: str,
    calls: Iterable[ToolCall],
    *,
    waiting: Container[str] = (),
    highlighted: dict[str, str] | None = None,
) -> str:
    """``html`` (round panels) with each code call's code shown once, highlighted.

    ``waiting``: ids of calls awaiting approval; ``highlighted``: code -> its highlighted
    block, kept by a live turn (it redraws often; pygments then runs once per code).
    """
    for call in calls:
        code = code_of(call)
        if code is None:
            continue
        shown = f"{_LABEL}<pre>{escape(arguments_text(call))}</pre>"
        others = {name: value for name, value in call.arguments.items() if name != "code"}
        parts = [_LABEL]
        if others:
            rest = dataclasses.replace(call, arguments=others)
            parts.append(f"<pre>{escape(arguments_text(rest))}</pre>")
        if call.id in waiting:
            parts.append(IN_APPROVAL)
        else:
            cache = {} if highlighted is None else highlighted
            if code not in cache:
                cache[code] = code_html(code)
            parts.append(cache[code])
        html = html.replace(shown, "".join(parts), 1)
    return html
