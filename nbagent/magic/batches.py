"""``%agent batches``: the provider batch jobs in the history, newest first.

One line per job: its id, provider and model, state, requests (succeeded / failed
once collected), cost at the batch rate, and when it was created and ended.
"""

from __future__ import annotations

import time
from typing import Any

from ..cost import format_cost
from ..store.batch_jobs import BatchJobs

__all__ = ["batches_text"]

_BASIS_NOTE = {"standard": " (standard price: genai-prices knows no batch discount for this model)"}


def batches_text(store: Any, *, limit: int = 50) -> str:
    """The listing for ``store`` (the agent's history), or a line saying there is none."""
    if store is None:
        return "No history (store=None): batch jobs are not journaled."
    jobs = BatchJobs(store).listing(limit)
    if not jobs:
        return "No batch jobs yet: Agent.map(..., mode='batch') submits them."
    lines = []
    for job in jobs:
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(job.created_at))
        ended = time.strftime("%H:%M", time.localtime(job.ended_at)) if job.ended_at else "running"
        cost = "cost unknown" if job.cost is None else format_cost(job.cost)
        lines.append(
            f"{job.job_id}  {job.provider}:{job.model}  {job.state}  round {job.round}  "
            f"{job.requests} requests ({job.succeeded} succeeded, {job.failed} failed)  "
            f"{cost}{_BASIS_NOTE.get(job.price_basis or '', '')}  {created} -> {ended}"
        )
    return "\n".join(lines)
