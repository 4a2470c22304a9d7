"""One row: a full agent run in a conversation of its own, turned into a row outcome.

:func:`run_row` is the one place a row's run is started, so moving it onto another
run API changes one function. The run has the agent's tools, system prompt and
settings; by default the conversations of failed rows go to the agent's history
(``history=True``: every row's), so their rounds can be reopened after a restart.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import math
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..events import Event, RunFinished
from ..messages import Conversation
from ..results import RunResult, stop_reason_words
from ..run.settings import RunOptions, RunSettings
from .executor import RowJob, RowOutcome

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..providers import Provider
    from ..store import Store
    from ..tools import Tool

__all__ = ["BatchAgent", "RowContext", "outcome_of", "quiet_row_warnings", "run_row"]

_IN_ROW: contextvars.ContextVar[bool] = contextvars.ContextVar("nbagent_batch_row", default=False)


class _RowWarnings(logging.Filter):
    """Keeps a row's loop warnings out of the output: its ``error`` column says why.

    5,000 failing rows would otherwise print 5,000 lines under the progress panel.
    Errors still pass, and everything does when nbagent's logging is turned up
    (``NBAGENT_LOG=info`` or ``debug``).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if not _IN_ROW.get() or record.levelno >= logging.ERROR:
            return True
        return logging.getLogger("nbagent").isEnabledFor(logging.INFO)


_ROW_WARNINGS = _RowWarnings()


def quiet_row_warnings() -> None:
    """Install the filter on the ``nbagent`` logger (once; it only acts inside rows)."""
    logging.getLogger("nbagent").addFilter(_ROW_WARNINGS)


class BatchAgent(Protocol):
    """What a batch needs of an agent (``nbagent.Agent`` is one; the batch sits below it)."""

    model: str
    settings: RunSettings
    store: Store | None

    @property
    def system(self) -> str | None:
        """The system prompt every row's conversation starts with."""

    @property
    def tools(self) -> dict[str, Tool]:
        """The tools every row may call."""

    @property
    def provider(self) -> Provider:
        """The model adapter (used as is when it is a provider object)."""

    def stream(
        self, prompt: str, *, paced: bool = False, **options: Unpack[RunOptions]
    ) -> AsyncIterator[Event]:
        """One run of ``prompt`` (``conversation=`` a row's own), as events."""


RowsAgent = Callable[["Provider", "Store | None"], BatchAgent]
"""Makes the agent the rows run on: the batch's provider (its pool and limits) and the
history the rows write to (``Agent`` hands in a copy of itself sharing everything else)."""


@dataclass
class RowContext:
    """What every row of one batch runs with."""

    agent: BatchAgent
    """The agent the rows run on (see :data:`RowsAgent`)."""
    options: dict[str, Any]
    """Run options of every row (``output_type=``, ``max_rounds=``...)."""
    store: Store | None
    """Where ``history="failed"`` writes a failed row's conversation."""
    secrets: list[str]
    provider_uses_http: bool = False
    """True when the limits hold per HTTP request (else per row start)."""
    history: bool | str = "failed"
    """Which rows' conversations go to the agent's history: True (all), ``"failed"``
    (the failed ones, to reopen their rounds later) or False (none). The journal is
    written whatever this says."""


async def run_row(
    context: RowContext, prompt: str, conversation: Conversation | None = None
) -> tuple[RunResult | None, BaseException | None]:
    """Run ``prompt`` in a new conversation; (the result, the error the run raised).

    The one place a row's run starts, on the driver and on a cluster's workers: the
    agent's public run with a conversation of the row's own (``agent.conversation``
    stays as it is). ``conversation``: that conversation, when the caller chose its id
    or reads its messages afterwards (a worker); None: a new one.
    """
    _IN_ROW.set(True)  # this row's task (and the run it starts) log quietly
    if conversation is None:
        conversation = Conversation(system=context.agent.system)
    result: RunResult | None = None
    error: BaseException | None = None
    events = context.agent.stream(prompt, conversation=conversation, **context.options)
    try:
        async for event in events:
            if isinstance(event, RunFinished):
                result = event.result
    except asyncio.CancelledError:
        _save_failed(context, conversation, result)
        raise
    except Exception as exc:  # the row failed; the batch goes on
        error = exc
    finally:
        await events.aclose()  # type: ignore[attr-defined]
    if error is not None or (result is not None and result.stop_reason != "complete"):
        _save_failed(context, conversation, result)
    return result, error


def _save_failed(context: RowContext, conversation: Conversation, result: RunResult | None) -> None:
    """``history="failed"``: write a failed row's conversation (one transaction)."""
    if context.history != "failed" or context.store is None or result is None:
        return
    writer = context.store.writer(conversation, secrets=context.secrets)
    writer.finish(result)


async def outcome_of(context: RowContext, job: RowJob, output_type: Any) -> RowOutcome:
    """Run one row job and describe it for the journal and the frame."""
    started = time.perf_counter()
    result, error = await run_row(context, job.prompt)
    seconds = time.perf_counter() - started
    if result is None:
        return RowOutcome(job.key, False, error=_error_text(None, error), seconds=seconds)
    usage = result.usage
    ok = error is None and result.stop_reason == "complete"
    outcome = RowOutcome(
        key=job.key,
        ok=ok,
        cost=usage.cost if usage.total_tokens else 0.0,
        tokens=usage.total_tokens,
        rounds=len(result.rounds),
        seconds=seconds,
        conversation_id=result.conversation_id,
    )
    if ok:
        outcome.value = result.output
        outcome.output_json = dump_output(result.output, output_type)
    else:
        outcome.error = _error_text(result, error)
        outcome.result = result
    return outcome


def dump_output(value: Any, output_type: Any) -> str:
    """The row's answer as JSON for the journal."""
    if output_type is None:
        return json.dumps(value, ensure_ascii=False)
    import pydantic

    return pydantic.TypeAdapter(output_type).dump_json(value).decode("utf-8")


def load_output(text: str | None, output_type: Any) -> Any:
    """The journaled answer back as the value a run would have returned."""
    if text is None:
        return None
    if output_type is None:
        return json.loads(text)
    import pydantic

    return pydantic.TypeAdapter(output_type).validate_json(text)


def _error_text(result: RunResult | None, error: BaseException | None) -> str:
    """Why a row failed, in one line: the run's error, or its stop reason and last failure."""
    if error is not None:
        text = str(error) or type(error).__name__
        return f"{type(error).__name__}: {text}"[:500]
    assert result is not None
    why = stop_reason_words(result.stop_reason)
    failures = [r for rnd in result.rounds for r in rnd.results if not r.ok]
    if failures:
        last = failures[-1]
        why += f": {last.name} failed: {last.error or last.content}"
    elif result.stop_reason == "output_invalid" and result.text:
        why += f": the answer was {result.text[:200]!r}"
    return why[:500]


def nan_if_none(value: float | None) -> float:
    """Cost as a float column value (NaN when unknown)."""
    return math.nan if value is None else float(value)
