"""The panel a batch ends with in ``%%agent --over``: counts, cost, time, the first failures.

Each failure is a ``<details>`` line (its row and error) that opens onto the
row's round panels, rendered as any run's are. Everything a model or tool wrote
is escaped.
"""

from __future__ import annotations

import html

from ..cost import format_cost
from .runner import BatchResult

__all__ = ["summary_bundle"]


def summary_bundle(result: BatchResult, into: str) -> dict[str, str]:
    """``text/html`` and ``text/plain`` of the summary; ``into`` names the frame's variable."""
    stats = result.stats
    done = stats.done + stats.from_journal
    cost = format_cost(stats.cost) if stats.cost_known else "cost unknown"
    head = (
        f"{done:,} of {stats.total:,} rows done ({stats.from_journal:,} from the journal), "
        f"{stats.failed:,} failed · {cost} · {stats.elapsed:.1f} s"
    )
    if stats.cost_capped:
        head += " · stopped at the cost cap"
    elif stats.stopped:
        head += " · stopped"
    lines = [f"{head} → {into}"]
    parts = [
        '<div class="nbagent-map-summary" style="font:13px sans-serif">',
        f"<div><b>map</b>: {html.escape(head)} → <code>{html.escape(into)}</code></div>",
    ]
    for label, outcome in result.failures:
        error = outcome.error or "failed"
        lines.append(f"  row {label!r}: {error}")
        panels = ""
        if outcome.result is not None:
            panels = outcome.result.mime_bundle().get("text/html", "")
        parts.append(
            f'<details style="margin-left:1em"><summary style="color:#b91c1c">row '
            f"{html.escape(repr(label))}: {html.escape(error)}</summary>{panels}</details>"
        )
    parts.append("</div>")
    return {"text/plain": "\n".join(lines), "text/html": "".join(parts)}
