"""What the embedded model may say: only figures it was given, and failures in plain words.

A 135M model restates numbers from its own "arithmetic" and, after a failed call,
invents the result it did not get. So:

* :class:`FigureGuard` filters the streamed answer: every figure (number, date,
  amount) must appear in the user's messages or in a tool result of the
  conversation; any other is replaced by :data:`UNSUPPORTED`;
* :func:`failure_answer` is the whole answer after a round whose calls all failed
  or were denied: what failed and the tool's own error, and no results.
"""

from __future__ import annotations

import re

from ...messages import ToolResult
from ..base import ModelRequest

UNSUPPORTED = "[a figure no tool returned]"
# A figure: digits, possibly with inner separators (1,234.5  2024-05-01  12:30  3/4).
_FIGURE = re.compile(r"\d+(?:[.,:/\-]\d+)*")
_DIGIT_RUN_END = re.compile(r"[\d.,:/\-]*$")


def _forms(figure: str) -> set[str]:
    """Spellings treated as the same figure: ``1,234.50`` = ``1234.50`` = ``1234.5``."""
    forms = {figure, figure.replace(",", "")}
    for form in list(forms):
        if re.fullmatch(r"\d+\.\d+", form):
            forms.add(form.rstrip("0").rstrip("."))
    return forms


def known_figures(request: ModelRequest) -> set[str]:
    """Every figure in the user's messages, the system prompt and the tool results."""
    texts = [request.system or ""]
    for message in request.messages:
        if message.role != "assistant":
            texts.append(message.content)
        for tool_round in message.rounds or []:
            texts += [c.raw_arguments or "" for c in tool_round.calls]
            texts += [r.content for r in tool_round.results]
    known: set[str] = set()
    for text in texts:
        for match in _FIGURE.finditer(text):
            known |= _forms(match.group(0))
            known.update(match.group(0).replace(",", ".").split("."))  # parts of 1.5 / 12:30
            known.update(re.split(r"[.,:/\-]", match.group(0)))
    return known


class FigureGuard:
    """Streams text through, holding back a figure until it ends, then checking it."""

    def __init__(self, known: set[str]) -> None:
        self.known = known
        self.pending = ""
        self.emitted = ""
        self.replaced: list[str] = []

    def feed(self, piece: str) -> str:
        """Text safe to show now (a figure still being written is held back)."""
        text = self.pending + piece
        tail = _DIGIT_RUN_END.search(text)
        cut = tail.start() if tail and any(ch.isdigit() for ch in tail.group(0)) else len(text)
        self.pending = text[cut:]
        return self._check(text[:cut])

    def flush(self) -> str:
        """The rest, at the end of the answer."""
        text, self.pending = self.pending, ""
        return self._check(text)

    def _check(self, text: str) -> str:
        def replace(match: re.Match[str]) -> str:
            figure = match.group(0).rstrip(".,:/-")
            trail = match.group(0)[len(figure) :]
            if self._allowed(figure, match.start(), text):
                return match.group(0)
            self.replaced.append(figure)
            return UNSUPPORTED + trail

        out = _FIGURE.sub(replace, text)
        self.emitted += out
        return out

    def _allowed(self, figure: str, start: int, text: str) -> bool:
        if _forms(figure) & self.known:
            return True
        # A list marker ("1. ", "2) ") at the start of a line is not a claim.
        before = (self.emitted + text[:start]).rsplit("\n", 1)[-1]
        after = text[start + len(figure) : start + len(figure) + 2]
        return before.strip() == "" and len(figure) <= 2 and after[:1] in (".", ")")


def failure_answer(results: list[ToolResult]) -> str | None:
    """The answer when every call of the last round failed or was denied (else None)."""
    if not results or any(r.ok for r in results):
        return None
    lines = []
    for result in results:
        error = (result.error or result.content or "no details").strip()
        if result.approval and result.approval.startswith("denied"):
            lines.append(f"The call to {result.name} was not run: {error}")
        else:
            lines.append(f"The tool {result.name} failed: {error}")
    lines.append("So I have no result to give you; I will not guess one.")
    return "\n".join(lines)
