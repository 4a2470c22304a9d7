"""The chat's static HTML twin: the transcript as a plain ``text/html`` output.

A notebook saved with a chat keeps, next to the widget, an output holding the
transcript as it was. Where the widget cannot run (no kernel, GitHub, nbviewer,
nbconvert) that output is what shows; where the widget runs, its stylesheet hides
the twin (``.nbagent-chat-twin`` is only hidden by ``chat.css``, which only a live
widget loads).
"""

from __future__ import annotations

from typing import Any

from ..render import escape

_STYLE = (
    "<style>.nbagent-chat-twin .nbagent-user{border-radius:6px;padding:6px 10px;"
    "margin:6px 0;white-space:pre-wrap;background:var(--jp-layout-color2,rgba(128,128,128,.12))}"
    ".nbagent-chat-twin .nbagent-user-label{font-weight:600;font-size:.85em;opacity:.8}"
    "</style>"
)


def twin_html(turns: list[dict[str, Any]], live: dict[str, Any] | None = None) -> str:
    """The transcript of ``turns`` (and a turn still running) as one static HTML block."""
    shown = [*turns, live] if live else turns
    body = "".join(t["html"] for t in shown)
    if not body:
        body = f"<p>{escape('Chat (empty): run the cell to start chatting.')}</p>"
    return f'{_STYLE}<div class="nbagent-chat-twin" role="log" aria-label="Chat">{body}</div>'


class StaticTwin:
    """The twin's output, updated in place (by display id) after every turn."""

    def __init__(self) -> None:
        self._handle: Any = None

    def show(self, turns: list[dict[str, Any]]) -> None:
        """Display the twin in the current cell's output (once per display of the chat)."""
        from IPython.display import display

        self._handle = display({"text/html": twin_html(turns)}, raw=True, display_id=True)

    def update(self, turns: list[dict[str, Any]], live: dict[str, Any] | None = None) -> None:
        """Redraw the twin wherever it was shown (nothing if the chat was never displayed)."""
        if self._handle is not None:
            self._handle.update({"text/html": twin_html(turns, live)}, raw=True)
