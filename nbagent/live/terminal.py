"""Sink: progress appended to stdout, for terminal IPython (which cannot redraw).

Terminal IPython's plain DisplayPublisher prints every display update again, so
this sink never redraws: it appends what the transcript gained since the last
update (a status line when the status changes, the streamed text as it arrives,
one line per finished round), and at the end prints only what was not shown yet
(the rest of the answer, e.g. a stop note, and the footer).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ..render import footer_text, round_summary, terminal_safe
from ..results import STOPS
from .approval import ask_on_stdin

if TYPE_CHECKING:
    from ..messages import ToolCall
    from ..render import Transcript
    from ..tools import Tool

__all__ = ["TerminalPrinter"]


class TerminalPrinter:
    """Appends a run's progress to stdout; text already written stays.

    Every piece of model or tool text goes through the same control-character
    filter as the plain-text twin (a model must not drive the terminal), and every
    write is flushed so progress shows while a slow model is still working.
    """

    interval = 0.0
    """Every change as it happens: appending costs only the new text."""

    def __init__(self) -> None:
        self.streamed = ""
        """Text streamed since the last finished round (the answer, once the run ends)."""
        self._status = ""
        self._rounds = 0
        self._parts = 0
        self._at_line_start = True

    # -- writing ---------------------------------------------------------------------

    def _write(self, text: str) -> None:
        if not text:
            return
        out = sys.stdout  # looked up per write: IPython and pytest swap it
        out.write(terminal_safe(text))
        out.flush()
        self._at_line_start = text.endswith("\n")

    def end_line(self) -> None:
        """Finish a partly written line (before a status line or an input() prompt)."""
        if not self._at_line_start:
            self._write("\n")

    def _line(self, text: str) -> None:
        self.end_line()
        self._write(text + "\n")

    # -- the sink ----------------------------------------------------------------------

    def start(self, transcript: Transcript) -> None:
        """Nothing to show before the run's first status."""

    def update(self, transcript: Transcript) -> None:
        """Append what changed: finished rounds, a new status, newly streamed text."""
        for index in range(self._rounds, len(transcript.rounds)):
            self._line(f"▸ {round_summary(transcript.rounds[index], index)}")
            self.streamed, self._parts = "", 0  # a finished round restarts the streamed text
        self._rounds = len(transcript.rounds)
        # Once interrupted, the closing "cancelled" note says so: no status line.
        if transcript.status != self._status and not transcript.interrupted:
            self._status = transcript.status
            self._line(f"· {transcript.status}")
        for part in transcript.text_parts[self._parts :]:
            if part and not self.streamed:
                self.end_line()  # the text starts on its own line, under the status
            self.streamed += part
            self._write(part)
        self._parts = len(transcript.text_parts)

    def ask(self, call: ToolCall, tool: Tool) -> tuple[bool, str]:
        """Ask through ``input()`` on a line of its own (code to run shown first)."""
        from ..kernel.display import code_ansi, code_of

        self.end_line()
        code = code_of(call)
        if code is not None:
            # The model's text is made safe first; only pygments' own colours are added.
            coloured = code_ansi(terminal_safe(code)).rstrip("\n") + "\n"
            sys.stdout.write(coloured)
            sys.stdout.flush()
            self._at_line_start = True
        return ask_on_stdin(call, tool)

    def finish(self, transcript: Transcript, *, error: BaseException | None) -> None:
        """Print what the stream did not show: the rest of the answer and the footer."""
        result = transcript.result
        if result is None:  # interrupted before the run could report how it ended
            cancelled = str(STOPS["cancelled"].note)
            self._line(cancelled if transcript.interrupted else "[run ended without a result]")
            return
        output = result.text
        if output.startswith(self.streamed):
            rest = output[len(self.streamed) :]  # e.g. the stop note after a partial answer
            self._write(rest.lstrip("\n") if self._at_line_start else rest)
        else:  # the final text was not streamed (or differs): show it whole
            self.end_line()
            self._write(output)
        self.end_line()
        self._write(f"\n— {footer_text(result)}\n")
