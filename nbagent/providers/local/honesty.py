"""What the embedded model may say: figures it was given, and failures in plain words.

A 135M model restates numbers from its own "arithmetic" and, after a failed call,
invents the result it did not get. So:

* :class:`FigureGuard` checks the streamed answer: every figure (number, date,
  amount) must appear in the user's messages or in a tool result of the
  conversation, as written or as the tool's own figure rounded; a figure written
  with a unit the sources also use ("12 columns") must be one they give with that
  unit ("4 columns"). A figure it cannot vouch for stays, marked
  :data:`DOUBTFUL` right after it, and is listed (``guard.doubtful``) for the
  footer: a mark, never a silent replacement, so an answer is never blanked.
  Code spans, code blocks and URLs are left alone;
* :func:`failure_answer` is the whole answer after a round whose calls all failed
  or were denied: what failed and the tool's own error, and no results.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...messages import ToolResult
from ..base import ModelRequest

DOUBTFUL = "[?]"
"""Written right after a figure no tool or message gave (the footer says what it means)."""
# A figure: digits, possibly with inner separators (1,234.5  2024-05-01  12:30  3/4),
# and the unit word that follows it, if any ("4 columns", "11 °C", "6.214 mile").
_FIGURE = re.compile(r"\d+(?:[.,:/\-]\d+)*")
_UNIT = re.compile(r"[ \t]?(°?[^\W\d_]+|%)")
# What is held back while streaming: a figure at the end, and the unit word after it
# that may still be growing.
_HELD_TAIL = re.compile(r"\d[\d.,:/\-]*(?:[ \t]?°?[^\W\d_]*)?$")
_URL_START = re.compile(r"(?:https?://|www\.)\S*$")


def _forms(figure: str) -> set[str]:
    """Spellings treated as the same figure: ``1,234.50`` = ``1234.50`` = ``1234.5``."""
    forms = {figure, figure.replace(",", "")}
    for form in list(forms):
        if re.fullmatch(r"\d+\.\d+", form):
            forms.add(form.rstrip("0").rstrip("."))
    return forms


def _unit_key(word: str) -> str:
    """``miles`` and ``mile`` are one unit; case does not matter."""
    word = word.lower()
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


@dataclass
class KnownFigures:
    """The figures of the sources, the units they were written with, and their decimals."""

    figures: set[str] = field(default_factory=set)
    units: dict[str, set[str]] = field(default_factory=dict)
    """Unit -> the figures the sources give with that unit."""
    decimals: set[float] = field(default_factory=set)
    """Each decimal figure, so a rounding of it counts as given (6.21 of 6.214)."""

    def add_text(self, text: str) -> None:
        """Take in the figures of one source text (a message, a call's arguments, a result)."""
        for match in _FIGURE.finditer(text):
            figure = match.group(0).rstrip(".,:/-")
            forms = _forms(figure)
            self.figures |= forms
            self.figures.update(figure.replace(",", ".").split("."))  # parts of 1.5 / 12:30
            self.figures.update(re.split(r"[.,:/\-]", figure))
            plain = figure.replace(",", "")
            if re.fullmatch(r"\d+\.\d+", plain):
                self.decimals.add(float(plain))
            unit = _UNIT.match(text, match.end())
            if unit:
                self.units.setdefault(_unit_key(unit.group(1)), set()).update(forms)

    def given(self, figure: str) -> bool:
        """The figure as written, or a source's decimal rounded to fewer places."""
        forms = _forms(figure)
        if forms & self.figures:
            return True
        plain = figure.replace(",", "")
        if not re.fullmatch(r"\d+(?:\.\d+)?", plain):
            return False
        places = len(plain.split(".")[1]) if "." in plain else 0
        value = float(plain)
        return any(
            abs(round(known, places) - value) < 10**-places / 2 or int(known) == value
            for known in self.decimals
        )


def known_figures(request: ModelRequest) -> KnownFigures:
    """Every figure in the user's messages, the system prompt and the tool results."""
    texts = [request.system or ""]
    for message in request.messages:
        if message.role != "assistant":
            texts.append(message.content)
        for tool_round in message.rounds or []:
            texts += [c.raw_arguments or "" for c in tool_round.calls]
            texts += [r.content for r in tool_round.results]
    known = KnownFigures()
    for text in texts:
        known.add_text(text)
    return known


class FigureGuard:
    """Streams text through, holding back a figure (and its unit) until it ends, then checking it.

    Args:
        known: what the sources gave (:func:`known_figures`), or a plain set of figures.
    """

    def __init__(self, known: KnownFigures | set[str]) -> None:
        self.known = known if isinstance(known, KnownFigures) else KnownFigures(set(known))
        self.pending = ""
        self.emitted = ""
        self.doubtful: list[str] = []
        """The figures marked :data:`DOUBTFUL`, with their unit ("12 columns")."""

    def feed(self, piece: str) -> str:
        """Text safe to show now (a figure still being written is held back)."""
        text = self.pending + piece
        tail = _HELD_TAIL.search(text)
        cut = tail.start() if tail else len(text)
        self.pending = text[cut:]
        return self._check(text[:cut])

    def flush(self) -> str:
        """The rest, at the end of the answer."""
        text, self.pending = self.pending, ""
        return self._check(text)

    def _check(self, text: str) -> str:
        out: list[str] = []
        last = 0
        for match in _FIGURE.finditer(text):
            figure = match.group(0).rstrip(".,:/-")
            end = match.start() + len(figure)
            out.append(text[last:end])
            last = end
            if self._left_alone(text, match.start()):
                continue
            unit = _UNIT.match(text, end)
            if not self._allowed(figure, unit.group(1) if unit else None, match.start(), text):
                self.doubtful.append(figure + (unit.group(0) if unit else ""))
                if unit:  # the mark goes after the unit: "12 columns[?]"
                    out.append(unit.group(0) + DOUBTFUL)
                    last = unit.end()
                else:
                    out.append(DOUBTFUL)
        out.append(text[last:])
        checked = "".join(out)
        self.emitted += checked
        return checked

    def _left_alone(self, text: str, start: int) -> bool:
        """Inside a code block, a code span or a URL: code and addresses are not claims."""
        before = self.emitted + text[:start]
        if before.count("```") % 2:
            return True
        line = before.rsplit("\n", 1)[-1].replace("```", "")
        return line.count("`") % 2 == 1 or _URL_START.search(before) is not None

    def _allowed(self, figure: str, unit: str | None, start: int, text: str) -> bool:
        if unit is not None:
            stated = self.known.units.get(_unit_key(unit))
            if stated is not None:  # the sources use this unit: the figure must be one of them
                return bool(_forms(figure) & stated) or _rounds_one_of(figure, stated)
        if self.known.given(figure):
            return True
        # A list marker ("1. ", "2) ") at the start of a line is not a claim.
        before = (self.emitted + text[:start]).rsplit("\n", 1)[-1]
        after = text[start + len(figure) : start + len(figure) + 2]
        return before.strip() == "" and len(figure) <= 2 and after[:1] in (".", ")")


def _rounds_one_of(figure: str, stated: set[str]) -> bool:
    """True when ``figure`` is one of ``stated`` rounded (6.21 miles of 6.214 mile)."""
    known = KnownFigures()
    for form in stated:
        known.add_text(form)
    return known.given(figure)


def doubtful_note(doubtful: list[str]) -> str:
    """The footer's line on the marked figures."""
    listed = ", ".join(dict.fromkeys(doubtful))
    count = len(doubtful)
    return f"{DOUBTFUL} {count} figure{'s' if count != 1 else ''} no tool returned: {listed}"


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
