r"""Live progress of a batch: the counts, and the surfaces that show them.

:class:`BatchStats` is the state (done, failed, running, rows per second,
tokens, cost so far and projected, ETA, the last errors). A display shows it:
:class:`NotebookDisplay` (one HTML output updated in place) in a Jupyter kernel,
:class:`TerminalLine` (one ``\\r`` line on stderr, tqdm's convention) elsewhere.
Both redraw at most every ``interval`` seconds, however fast rows finish, so
100,000 rows cost a few hundred redraws.
"""

from __future__ import annotations

import collections
import html
import importlib
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

from ..cost import format_cost
from .executor import RowOutcome

__all__ = [
    "BatchStats",
    "Display",
    "NotebookDisplay",
    "NullDisplay",
    "TerminalLine",
    "choose_display",
]

LAST_ERRORS = 3


@dataclass
class BatchStats:
    """Counts of one ``map`` call, updated as rows finish."""

    total: int
    """Distinct rows (identical rows run once)."""
    concurrency: int = 1
    from_journal: int = 0
    """Rows answered from the journal (done by an earlier call)."""
    done: int = 0
    failed: int = 0
    running: int = 0
    tokens: int = 0
    cost: float = 0.0
    cost_known: bool = True
    """False once a row's price was unknown (the cost shown is then a lower bound)."""
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    stopped: bool = False
    cost_capped: bool = False
    last_errors: collections.deque[str] = field(
        default_factory=lambda: collections.deque(maxlen=LAST_ERRORS)
    )

    def add(self, outcome: RowOutcome) -> None:
        """Count one finished row."""
        if outcome.ok:
            self.done += 1
        else:
            self.failed += 1
            self.last_errors.append(outcome.error or "failed")
        self.tokens += outcome.tokens
        if outcome.cost is None:
            self.cost_known = False
        else:
            self.cost += outcome.cost

    @property
    def elapsed(self) -> float:
        """Seconds since the batch started (to its end once it ended)."""
        return (self.ended or time.monotonic()) - self.started

    @property
    def finished(self) -> int:
        """Rows run by this call (journaled rows not counted)."""
        return self.done + self.failed

    @property
    def left(self) -> int:
        """Rows still to run."""
        return max(0, self.total - self.from_journal - self.finished)

    @property
    def rate(self) -> float:
        """Rows per second so far."""
        return self.finished / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def eta(self) -> float | None:
        """Seconds until every row has run, at the rate so far."""
        rate = self.rate
        return self.left / rate if rate > 0 else None

    @property
    def projected_cost(self) -> float | None:
        """The cost of every row this call runs, at the mean row cost so far."""
        if not self.finished or not self.cost_known:
            return None
        return self.cost / self.finished * (self.total - self.from_journal)

    def line(self) -> str:
        """One line: ``map 120/5,000 · 3 failed · 8 running · 12.3 rows/s · …``."""
        parts = [f"map {self.from_journal + self.finished:,}/{self.total:,}"]
        if self.from_journal:
            parts.append(f"{self.from_journal:,} from journal")
        if self.failed:
            parts.append(f"{self.failed:,} failed")
        if self.running:
            parts.append(f"{self.running} running")
        parts.append(f"{self.rate:.1f} rows/s")
        parts.append(f"{self.tokens:,} tokens")
        parts.append(self.cost_text())
        if self.ended is None and self.eta is not None:
            parts.append(f"ETA {_duration(self.eta)}")
        elif self.ended is not None:
            parts.append(_duration(self.elapsed))
        if self.cost_capped:
            parts.append("stopped at the cost cap")
        elif self.stopped:
            parts.append("stopped")
        return " · ".join(parts)

    def cost_text(self) -> str:
        """Cost so far (a lower bound when a price was unknown) and projected."""
        if not self.cost_known:
            return f"≥{format_cost(self.cost)}" if self.cost else "cost unknown"
        cost = format_cost(self.cost)
        projected = self.projected_cost
        if projected is not None and self.ended is None:
            cost += f" (projected {format_cost(projected)})"
        return cost


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class Display(Protocol):
    """Shows a batch's progress: ``start`` once, ``update`` often, ``finish`` once."""

    def start(self, stats: BatchStats) -> None:
        """The batch starts."""

    def update(self, stats: BatchStats) -> None:
        """A row finished (called from the thread that shows)."""

    def finish(self, stats: BatchStats) -> None:
        """The batch returned (stopped or not)."""


class NullDisplay:
    """No progress (``progress=False``)."""

    def start(self, stats: BatchStats) -> None:
        """Nothing to show."""

    def update(self, stats: BatchStats) -> None:
        """Nothing to show."""

    def finish(self, stats: BatchStats) -> None:
        """Nothing to show."""


class _Throttled:
    """Redraws at most every ``interval`` seconds; the final state is always drawn."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.redraws = 0
        self._last = -1e9

    def start(self, stats: BatchStats) -> None:
        """Draw the first state."""
        self._draw(stats)

    def update(self, stats: BatchStats) -> None:
        """Draw if ``interval`` passed since the last drawing."""
        if time.monotonic() - self._last >= self.interval:
            self._draw(stats)

    def finish(self, stats: BatchStats) -> None:
        """Draw the final state, whatever the throttle held back."""
        if stats.ended is None:
            stats.ended = time.monotonic()
        self._draw(stats, final=True)

    def _draw(self, stats: BatchStats, final: bool = False) -> None:
        self.redraws += 1
        self._last = time.monotonic()
        self.draw(stats, final)

    def draw(self, stats: BatchStats, final: bool) -> None:
        """Show ``stats`` (``final``: the batch has returned)."""
        raise NotImplementedError


class TerminalLine(_Throttled):
    """One progress line on ``file`` (stderr), redrawn with a carriage return."""

    def __init__(self, file: TextIO | None = None, *, interval: float = 0.2) -> None:
        super().__init__(interval)
        self.file = file or sys.stderr
        self._width = 0

    def draw(self, stats: BatchStats, final: bool) -> None:
        """Rewrite the line in place, padding over a longer previous one."""
        text = stats.line()
        pad = max(0, self._width - len(text))
        self._width = len(text)
        self.file.write("\r" + text + " " * pad + ("\n" if final else ""))
        self.file.flush()


class NotebookDisplay(_Throttled):
    """One HTML output in the cell, updated in place (a display handle)."""

    def __init__(self, *, interval: float = 0.25) -> None:
        super().__init__(interval)
        self._handle: Any = None

    def draw(self, stats: BatchStats, final: bool) -> None:
        """Show the panel (the first time) or update it in place."""
        bundle = {"text/html": progress_html(stats, final), "text/plain": stats.line()}
        if self._handle is None:
            ipython_display: Any = importlib.import_module("IPython.display")
            self._handle = ipython_display.display(bundle, raw=True, display_id=True)
        else:
            self._handle.update(bundle, raw=True)


def progress_html(stats: BatchStats, final: bool = False) -> str:
    """The live panel: a bar, the counts line, the last errors and how to stop."""
    total = max(1, stats.total)
    done = stats.from_journal + stats.finished
    width = 100.0 * done / total
    failed = 100.0 * stats.failed / total
    rows = [
        '<div class="nbagent-map" style="font:13px sans-serif;margin:4px 0">',
        '<div style="background:#eee;height:8px;border-radius:4px;overflow:hidden;display:flex">',
        f'<div style="background:#3b82f6;width:{width - failed:.2f}%"></div>',
        f'<div style="background:#dc2626;width:{failed:.2f}%"></div></div>',
        f'<div class="nbagent-map-line">{html.escape(stats.line())}</div>',
    ]
    if stats.last_errors:
        items = "".join(f"<li>{html.escape(e[:200])}</li>" for e in stats.last_errors)
        rows.append(
            f'<ul class="nbagent-map-errors" style="color:#b91c1c;margin:2px 0">{items}</ul>'
        )
    if not final:
        rows.append(
            '<div style="color:#666">Interrupt the kernel (■) to stop: finished rows are '
            "kept and journaled; the same call later resumes.</div>"
        )
    rows.append("</div>")
    return "".join(rows)


def choose_display(progress: bool | Display | None) -> Display:
    """``progress``: a display, False for none, None/True for the surface we are on."""
    if progress is False:
        return NullDisplay()
    if progress is None or progress is True:
        return NotebookDisplay() if _in_notebook() else TerminalLine()
    return progress


def _in_notebook() -> bool:
    """Whether this is a Jupyter kernel (terminal IPython and scripts are not)."""
    shell_module = sys.modules.get("IPython")
    if shell_module is None:
        return False
    try:
        shell = shell_module.get_ipython()
    except Exception:
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"
