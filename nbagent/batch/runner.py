"""The batch driver: rows in, the journal consulted and kept, rows run, a frame out.

:func:`run_batch` is what ``Agent.amap`` calls. It owns everything rows share:
the journal (the single source of truth for resume), the limits, the cost cap,
the progress display and Stop; an :class:`~nbagent.batch.executor.Executor`
only runs the rows it is handed.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..run.settings import FIELDS
from .executor import Executor, LocalExecutor, RowJob, RowOutcome
from .frame import build_frame, check_clashes
from .keys import batch_identity, row_key
from .limits import AdaptiveConcurrency, HttpLimits, RequestRate
from .progress import BatchStats, Display, choose_display
from .row import BatchAgent, RowContext, RowsAgent, load_output, outcome_of, quiet_row_warnings
from .rows import check_fields, fill_prompt, prompt_fields, read_rows
from .session import BatchSession

__all__ = ["BatchControl", "BatchResult", "run_batch"]

logger = logging.getLogger("nbagent")

COST_CAP_ERROR = "not run: cost cap"
STOPPED_ERROR = "not run: stopped"
FAILURES_KEPT = 5
"""Failed rows whose whole RunResult is kept for the summary panel (the rest: text only)."""

_RUN_SETTINGS = FIELDS - {"output_type", "max_cost"}
"""Run settings ``map`` passes to every row (its own ``max_cost`` caps the whole batch)."""


class BatchControl:
    """Stops a batch from any thread: no new rows start, rows in flight are cancelled."""

    def __init__(self) -> None:
        self.stopped = False
        self.result: BatchResult | None = None
        """The batch's frame, counts and first failures, once it has returned."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Future[Any] | None = None

    def stop(self) -> None:
        """Stop the batch; it returns the frame with what finished (the Stop button)."""
        self.stopped = True
        loop, task = self._loop, self._task
        if loop is None or task is None or loop.is_closed():
            return
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            task.cancel()
        else:
            loop.call_soon_threadsafe(task.cancel)


@dataclass
class BatchResult:
    """The frame and what the summary panel shows."""

    frame: Any
    stats: BatchStats
    failures: list[tuple[Any, RowOutcome]] = field(default_factory=list)
    """The first failed rows as (index label, outcome with its RunResult), in input order."""


@dataclass
class _Plan:
    """The distinct rows of the call, and which input positions each one answers."""

    keys: list[str]
    """The journal key of each input row, in input order."""
    jobs: dict[str, RowJob]
    """One job per distinct key, in first-seen order."""


async def run_batch(
    agent: BatchAgent,
    rows: Any,
    prompt: str,
    *,
    output_type: Any = None,
    concurrency: int = 8,
    max_cost: float | None = None,
    resume: bool = True,
    prefix: str = "",
    estimate: int | None = None,
    rpm: float | None = None,
    tpm: float | None = None,
    progress: bool | Display | None = None,
    history: bool | str = "failed",
    executor: Executor | None = None,
    control: BatchControl | None = None,
    provider_options: Mapping[str, Any] | None = None,
    rebuildable: bool = False,
    rows_agent: RowsAgent | None = None,
    settings: Mapping[str, Any] | None = None,
) -> BatchResult | Any:
    """Run ``prompt`` over ``rows``; see :meth:`nbagent.Agent.map` for the arguments.

    Returns a :class:`BatchResult`, or with ``estimate=k`` an
    :class:`~nbagent.batch.estimate.Estimate`.
    """
    if history not in (True, False, "failed"):
        raise ConfigError(f"history= takes True, False or 'failed', not {history!r}")
    if concurrency < 1:
        raise ConfigError(f"concurrency must be at least 1, not {concurrency}")
    unknown = set(settings or {}) - _RUN_SETTINGS
    if unknown:
        raise ConfigError(
            f"Agent.map got unknown option(s) {', '.join(sorted(unknown))}; run settings are "
            f"{', '.join(sorted(_RUN_SETTINGS))}"
        )
    quiet_row_warnings()
    table = read_rows(rows)
    check_fields(prompt_fields(prompt), table.columns)
    check_clashes(table.columns, output_type, prefix)
    tools = agent.tools
    _refuse_unapproved(tools, agent.settings.approver)
    session = BatchSession(
        agent, provider_options or {}, concurrency=concurrency, rebuildable=rebuildable
    )
    provider = session.provider
    if max_cost is not None:
        from ..cost import require_price

        require_price(provider)  # before any request is sent
    output_schema = None
    if output_type is not None:
        from ..run.output import OutputSpec

        output_schema = OutputSpec(output_type).schema
    identity = batch_identity(
        template=prompt, model=agent.model, system=agent.system,
        tools=[t.spec for t in tools.values()], output_schema=output_schema,
    )  # fmt: skip
    plan = _plan(table.records, prompt, identity)
    journal = None
    if agent.store is not None:
        from ..store import Journal

        journal = Journal(agent.store, identity)
    outcomes: dict[str, RowOutcome] = {}
    if journal is not None and resume:
        for key, row in journal.finished().items():
            if key in plan.jobs:
                outcomes[key] = RowOutcome(
                    key, True, load_output(row.output, output_type), row.output, None,
                    row.cost, row.tokens, row.rounds, row.seconds, row.conversation_id,
                )  # fmt: skip
    limit = AdaptiveConcurrency(concurrency)
    rate = RequestRate(rpm, tpm)
    # The rows run on the agent with the batch's provider; every row's history only
    # with history=True (a failed row's is written by the row itself otherwise).
    rows_store = agent.store if history is True else None
    runner = agent if rows_agent is None else rows_agent(provider, rows_store)
    options = {**dict(settings or {}), "output_type": output_type}
    context = RowContext(
        runner, options, agent.store, session.secrets,
        provider_uses_http=session.observed, history=history,
    )  # fmt: skip
    driver = BatchDriver(
        context=context,
        output_type=output_type,
        journal=journal,
        limit=limit,
        rate=rate,
        max_cost=max_cost,
        control=control or BatchControl(),
        executor=executor or LocalExecutor(),
        outcomes=outcomes,
    )
    try:
        session.attach(HttpLimits(limit, rate))
        if estimate is not None:
            from .estimate import estimate_batch

            return await estimate_batch(driver, plan.jobs, estimate, concurrency)
        display = choose_display(progress)
        stats = BatchStats(total=len(plan.jobs), concurrency=concurrency)
        stats.from_journal = len(outcomes)
        await driver.drive(_pending(plan, outcomes), stats, display)
    finally:
        await session.close()
    not_run = COST_CAP_ERROR if driver.cost_capped else STOPPED_ERROR
    frame = build_frame(
        [outcomes.get(key) for key in plan.keys], table.index, output_type,
        prefix=prefix, not_run=not_run,
    )  # fmt: skip
    failures: list[tuple[Any, RowOutcome]] = []
    for label, key in zip(table.index, plan.keys, strict=True):
        outcome = outcomes.get(key)
        if outcome is not None and not outcome.ok and len(failures) < FAILURES_KEPT:
            failures.append((label, outcome))
    result = BatchResult(frame, stats, failures)
    driver.control.result = result
    return result


def _plan(records: Any, prompt: str, identity: str) -> _Plan:
    keys: list[str] = []
    jobs: dict[str, RowJob] = {}
    for record in records:
        text = fill_prompt(prompt, record)
        key = row_key(identity, text)
        keys.append(key)
        if key not in jobs:
            jobs[key] = RowJob(key, text)
    return _Plan(keys, jobs)


def _pending(plan: _Plan, outcomes: Mapping[str, RowOutcome]) -> Iterator[RowJob]:
    return (job for key, job in plan.jobs.items() if key not in outcomes)


def _refuse_unapproved(tools: Mapping[str, Any], approver: Any) -> None:
    """Refuse, before any row, tools that need approval when no policy allows them."""
    needing = sorted(name for name, t in tools.items() if t.requires_approval)
    if not needing or approver is not None:
        return
    from ..tools.approval import policy_approver

    decide = policy_approver()  # the policy each row's run would apply
    refused = [name for name in needing if not decide(_NamedCall(name), tools[name])[0]]
    if refused:
        raise ConfigError(
            f"tool(s) {', '.join(refused)} need approval, and a batch cannot ask about every "
            "row: pass approver= (a function deciding each call) to the Agent, set "
            "NBAGENT_APPROVAL=allow:" + ",".join(refused) + ", or leave the tool(s) out"
        )


@dataclass
class _NamedCall:
    """A stand-in call the approval policy can read the tool name from."""

    name: str


@dataclass
class BatchDriver:
    """The gate, the journal writes and the progress of one batch run."""

    context: RowContext
    output_type: Any
    journal: Any
    limit: AdaptiveConcurrency
    rate: RequestRate
    max_cost: float | None
    control: BatchControl
    executor: Executor
    outcomes: dict[str, RowOutcome]
    failures_kept: int = 0
    cost_capped: bool = False
    spent: float = 0.0
    priciest_row: float | None = None
    _stats: BatchStats | None = None

    # -- the gate (read by the executor before each launch) ----------------------------

    @property
    def capacity(self) -> int:
        return self.limit.capacity

    def may_launch(self, running: int) -> bool:
        if self.control.stopped:
            return False
        if self.max_cost is None:
            return True
        if self.priciest_row is None:
            # No row has finished: its price is unknown, so one row at a time.
            if running == 0 and self.spent < self.max_cost:
                return True
            return False
        # The next row could cost as much as the priciest so far, as could each in flight.
        if self.spent + (running + 1) * self.priciest_row > self.max_cost:
            self.cost_capped = True
            return False
        return True

    # -- running -------------------------------------------------------------------------

    async def run_one(self, job: RowJob) -> RowOutcome:
        if self.rate.active and not self.context.provider_uses_http:
            await self.rate.admit(len(job.prompt) // 4)
        if self._stats is not None:
            self._stats.running += 1
        try:
            return await outcome_of(self.context, job, self.output_type)
        finally:
            if self._stats is not None:
                self._stats.running -= 1

    async def drive(self, jobs: Iterator[RowJob], stats: BatchStats, display: Display) -> None:
        """Run ``jobs``, journaling and showing each outcome; returns when done or stopped."""
        self._stats = stats
        display.start(stats)
        consume = asyncio.ensure_future(self._consume(jobs, stats, display))
        self.control._loop = asyncio.get_running_loop()
        self.control._task = consume
        try:
            await consume
        except asyncio.CancelledError:
            if not self.control.stopped:
                raise  # our caller was cancelled, not the batch stopped
        except KeyboardInterrupt:  # Ctrl-C while the batch runs on the caller's own loop
            self.control.stopped = True
        finally:
            stats.running = 0
            stats.stopped = self.control.stopped
            stats.cost_capped = self.cost_capped
            display.finish(stats)

    async def _consume(self, jobs: Iterator[RowJob], stats: BatchStats, display: Display) -> None:
        outcomes = self.executor.run(jobs, self.run_one, self)
        try:
            async for outcome in outcomes:
                self.record(outcome)
                stats.add(outcome)
                display.update(stats)
        finally:
            await outcomes.aclose()  # type: ignore[attr-defined]

    def record(self, outcome: RowOutcome) -> None:
        """Journal the row at once, keep it for the frame, and count its cost."""
        if self.journal is not None:
            from ..store import JournalRow

            self.journal.save(
                JournalRow(
                    outcome.key,
                    outcome.ok,
                    outcome.output_json,
                    outcome.error,
                    outcome.cost,
                    outcome.tokens,
                    outcome.rounds,
                    outcome.seconds,
                    outcome.conversation_id,
                )  # fmt: skip
            )
        if outcome.cost is not None and not math.isnan(outcome.cost):
            self.spent += outcome.cost
            self.priciest_row = max(self.priciest_row or 0.0, outcome.cost)
        if not outcome.ok:
            if self.failures_kept < FAILURES_KEPT:
                self.failures_kept += 1
            else:
                outcome.result = None  # bounded memory: only the first failures keep rounds
        self.outcomes[outcome.key] = outcome
