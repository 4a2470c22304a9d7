"""``agent.map(..., estimate=k)``: run k sample rows, project the whole frame's cost and time.

The sample rows are spread over the frame and run like any others (journaled, so
the real run does not pay for them twice). The range is the mean row cost plus
or minus two standard errors (the sample's min and max for fewer than 3 rows),
times the rows still to run; the time assumes the batch's concurrency.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from ..cost import format_cost
from .executor import RowJob, RowOutcome
from .progress import BatchStats, Display, NullDisplay

__all__ = ["Estimate", "estimate_batch"]


@dataclass
class Estimate:
    """What running the whole frame would cost and take, from a sample of rows."""

    rows: int
    """Distinct rows in the frame."""
    rows_left: int
    """Rows not in the journal yet (what the real run pays for)."""
    sampled: int
    failed: int
    """Sample rows that failed (their cost counts all the same)."""
    cost: float | None
    """Projected USD for the rows left; None when a price is unknown."""
    cost_low: float | None
    cost_high: float | None
    seconds: float
    """Projected wall time for the rows left at the batch's concurrency."""
    tokens_per_row: float

    def __str__(self) -> str:
        if self.cost is None:
            cost = "cost unknown (no price for this model)"
        else:
            cost = (
                f"{format_cost(self.cost)} (range {format_cost(self.cost_low)}–"
                f"{format_cost(self.cost_high)})"
            )
        return (
            f"{self.rows_left:,} of {self.rows:,} rows left: about {cost}, "
            f"{_minutes(self.seconds)}, {self.tokens_per_row:,.0f} tokens a row "
            f"(from {self.sampled} sample rows, {self.failed} failed)"
        )

    def _repr_pretty_(self, printer: object, cycle: bool) -> None:
        printer.text(f"Estimate: {self}")  # type: ignore[attr-defined]

    def _repr_html_(self) -> str:
        import html

        return f'<div class="nbagent-estimate"><b>Estimate</b>: {html.escape(str(self))}</div>'


class Driver(Protocol):
    """What the estimate needs of the batch driver (``runner.BatchDriver``)."""

    outcomes: dict[str, RowOutcome]

    async def drive(self, jobs: Iterator[RowJob], stats: BatchStats, display: Display) -> None:
        """Run ``jobs`` as the batch would."""
        ...


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


async def estimate_batch(
    driver: Driver, jobs: Mapping[str, RowJob], k: int, concurrency: int
) -> Estimate:
    """Run ``k`` sample rows of ``jobs`` (those not journaled) and project the rest."""
    keys = list(jobs)
    k = max(1, min(int(k), len(keys))) if keys else 0
    step = len(keys) / k if k else 1
    sample = list(dict.fromkeys(keys[int(i * step)] for i in range(k)))
    todo = (jobs[key] for key in sample if key not in driver.outcomes)
    stats = BatchStats(total=len(sample), concurrency=concurrency)
    journaled_before = {key for key in keys if key in driver.outcomes}
    await driver.drive(todo, stats, NullDisplay())
    outcomes = [driver.outcomes[key] for key in sample if key in driver.outcomes]
    left = sum(1 for key in keys if key not in driver.outcomes or not driver.outcomes[key].ok)
    costs = [o.cost for o in outcomes]
    known = [c for c in costs if c is not None]
    seconds = [o.seconds for o in outcomes if o.key not in journaled_before] or [
        o.seconds for o in outcomes
    ]
    mean_seconds = statistics.fmean(seconds) if seconds else 0.0
    tokens = statistics.fmean([o.tokens for o in outcomes]) if outcomes else 0.0
    cost = low = high = None
    if outcomes and len(known) == len(costs):
        mean = statistics.fmean(known)
        if len(known) >= 3:
            spread = 2 * statistics.stdev(known) / math.sqrt(len(known))
            low, high = max(min(known), mean - spread), mean + spread
        else:
            low, high = min(known), max(known)
        cost, low, high = mean * left, low * left, high * left
    return Estimate(
        rows=len(keys),
        rows_left=left,
        sampled=len(outcomes),
        failed=sum(1 for o in outcomes if not o.ok),
        cost=cost,
        cost_low=low,
        cost_high=high,
        seconds=mean_seconds * math.ceil(left / max(1, concurrency)),
        tokens_per_row=tokens,
    )
