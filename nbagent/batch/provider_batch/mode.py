"""``Agent.map(..., mode="batch")``: the options, and the executor and agent they make.

``mode="batch"`` takes the defaults; ``mode=ProviderBatch(poll_interval=5)`` sets
them. :func:`batch_mode_options` turns the mode into what the batch driver takes:
an executor whose rows share one :class:`~.jobs.BatchRounds`, and the agent the rows
run on, whose provider is the live adapter wrapped in a :class:`~.provider.BatchedProvider`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import ConfigError
from ...providers.batch import BatchApi
from ...providers.http import HttpProvider
from .executor import ProviderBatchExecutor
from .jobs import BatchRounds
from .provider import BatchedProvider

__all__ = ["ProviderBatch", "batch_api", "batch_mode_options"]


@dataclass(frozen=True)
class ProviderBatch:
    """How ``mode="batch"`` runs (``mode=ProviderBatch(...)`` to change it)."""

    poll_interval: float = 30.0
    """Seconds between status requests while a job runs (jobs take minutes to hours)."""
    max_job_requests: int | None = None
    """Requests per job at most (None: the API's own limit); smaller jobs end sooner."""


def batch_api(provider: Any) -> BatchApi:
    """The batch API of ``provider``'s account (its own declaration); ConfigError if none."""
    api = provider.batch_api() if isinstance(provider, HttpProvider) else None
    if api is not None:
        return api
    raise ConfigError(
        f"mode='batch' needs a provider with a batch API (OpenAI, Anthropic or Gemini), "
        f"not {getattr(provider, 'name', type(provider).__name__)}; leave mode= out to run live"
    )


def batch_mode_options(agent: Any, mode: Any, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` (``run_batch``'s) with the executor and rows agent of batch mode."""
    if mode == "batch":
        mode = ProviderBatch()
    if not isinstance(mode, ProviderBatch):
        raise ConfigError(f"mode= takes 'live', 'batch' or a ProviderBatch(...), not {mode!r}")
    for refused, why in (
        ("executor", "batch mode is its own executor"),
        ("max_cost", "a job's cost is known only once it ends; run estimate= live first"),
        ("estimate", "an estimate runs sample rows live; drop mode= for it"),
    ):
        if options.get(refused) is not None:
            raise ConfigError(f"{refused}= cannot be combined with mode='batch': {why}")
    provider = agent.provider
    api = batch_api(provider)
    store = agent.store
    jobs = None
    if store is not None:
        from ...store.batch_jobs import BatchJobs

        jobs = BatchJobs(store)
    if mode.max_job_requests is not None and mode.max_job_requests < 1:
        raise ConfigError(f"max_job_requests must be at least 1, not {mode.max_job_requests}")
    rounds = BatchRounds(
        api, model=provider.model, jobs=jobs, poll_interval=mode.poll_interval,
        reuse=options.get("resume", True), max_job_requests=mode.max_job_requests,
    )  # fmt: skip
    batched = BatchedProvider(provider, rounds)
    make_rows_agent = options["rows_agent"]
    settings = dict(options.get("settings") or {})
    # A job may take hours: the rows' run deadline (300 s by default) is off unless set.
    settings.setdefault("timeout", None)
    return {
        **options,
        "settings": settings,
        "executor": ProviderBatchExecutor(rounds),
        "rebuildable": False,  # no pool of its own: the jobs' requests use the agent's client
        "rows_agent": lambda _provider, rows_store: make_rows_agent(batched, rows_store),
    }
