"""The agent loop: one round at a time, stop conditions, events.

A round is one model request plus the execution of the calls it returned. The
loop drives a :class:`~nbagent.run.steps.Steps` (which owns the run's state, its
requests and its RunResult) and makes the decisions: when to force the final
answer, when to stop, what the status line says. Whatever ends the run it leaves
the history valid: every call has exactly one result.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import time
from collections.abc import AsyncGenerator, Mapping

from .._internal.deadline import context_with_deadline
from ..errors import ProviderError, ToolError
from ..events import (
    Event,
    Status,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolProgress,
)
from ..messages import ToolCall, ToolResult, ToolRound
from ..providers.base import ModelRequest, Provider, ProviderEvent, TextChunk
from ..results import RunResult
from . import status as statuses
from .steps import ModelReply, RunSpec, Steps, execute_calls
from .stops import STOPS, StopReason

logger = logging.getLogger("nbagent")

__all__ = ["Run", "strict_from_env"]

BUDGETS: tuple[StopReason, ...] = ("token_budget", "cost_budget")
"""Budgets that end a run with one last request for the answer, within what is left."""


def strict_from_env(env: Mapping[str, str] | None = None) -> bool:
    """``NBAGENT_STRICT=1`` in ``env`` (default: the process's): every run is strict.

    A strict run raises ToolError for a failing tool.
    """
    value = (os.environ if env is None else env).get("NBAGENT_STRICT", "")
    return value.strip().lower() in ("1", "true", "yes", "on")


class Run:
    """One run of the loop. Iterate :meth:`events`; :meth:`cancel` stops it.

    Args:
        listeners: see every event as it happens, whoever reads the stream (the
            history writer, the tracer).
        paced: wait, before each request, until the stream's reader has handled every
            earlier event (a live display that must redraw first). Off, the run never
            waits for its reader.
    """

    def __init__(self, spec: RunSpec, *, paced: bool = False) -> None:
        self.spec = spec
        self.provider = spec.provider
        self.conversation = spec.conversation
        self.tools = spec.tools
        self.settings = spec.settings
        self.model_label = spec.label
        self.paced = paced
        self.steps: Steps | None = None
        self._stop_reason: StopReason | None = None
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._partial_text: list[str] = []
        self._error: BaseException | None = None
        self._status_provider: Provider | None = None

    @property
    def result(self) -> RunResult | None:
        """The RunResult, once the run ended."""
        return None if self.steps is None else self.steps.result

    # -- public ------------------------------------------------------------------

    async def events(self) -> AsyncGenerator[Event, None]:
        """Run the loop, yielding events; the last event is always RunFinished."""
        self._start(streamed=True)
        try:
            while True:
                event = await self._queue.get()
                if event is None:
                    break
                yield event
                self._queue.task_done()  # the consumer came back for more: it handled this one
        finally:
            self._end()
        if not self._task_cancelled():  # cancelled before its first step: nothing to raise
            await self._raise_from_task()

    async def outcome(self) -> RunResult:
        """Run to the end with no reader of the stream (the listeners still hear each event).

        Nothing is queued and the caller is woken once, when the run ends: the path of
        ``agent.run`` and ``run_sync``, where nothing displays the events.
        """
        self._start(streamed=False)
        assert self._task is not None
        try:
            await asyncio.wait([self._task])  # neither raises nor cancels what the task does
        finally:
            self._end()  # a cancelled caller cancels the run (as a reader going away does)
        if not self._task_cancelled():
            await self._raise_from_task()
        assert self.result is not None
        return self.result

    def _end(self) -> None:
        """The reader is done: stop the timer; a run still going is cancelled and wrapped up."""
        if self._timer is not None:
            self._timer.cancel()
        assert self._task is not None
        if not self._task.done():
            # The consumer went away (Stop button, KeyboardInterrupt, break).
            self._stop("cancelled")
            self._finish()

    def _task_cancelled(self) -> bool:
        return self._task is not None and self._task.cancelled()

    async def _raise_from_task(self) -> None:
        """Re-raise provider errors / ToolError once the history is valid."""
        assert self._task is not None
        await self._task

    def cancel(self) -> None:
        """Stop the run as soon as possible with ``stop_reason="cancelled"`` (any thread)."""
        task = self._task
        if task is not None and not task.done():
            loop = task.get_loop()
            try:
                here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
            except RuntimeError:
                here = None
            if here is not loop:  # another thread: wake the run's loop now, not at its next turn
                try:
                    loop.call_soon_threadsafe(self._stop, "cancelled")
                    return
                except RuntimeError:  # its loop is closed
                    pass
        self._stop("cancelled")

    def _time_out(self) -> None:
        if self._task is not None and not self._task.done():
            logger.info("run timed out after %g s", self.settings.timeout)
            self._stop("timeout")

    # -- the task ----------------------------------------------------------------

    def _start(self, *, streamed: bool) -> None:
        listeners = list(self.spec.listeners)
        if streamed:
            listeners.append(self._queue.put_nowait)
        self.steps = Steps(dataclasses.replace(self.spec, listeners=listeners))
        self._emit = self.steps.emit  # type: ignore[method-assign]  # one call per event, not two
        logger.info("run started: model=%s tools=%s", self.model_label, sorted(self.tools))
        # The run's deadline rides in its task's context: retries and tools see what is left.
        context = context_with_deadline(self.settings.timeout)
        self._task = context.run(asyncio.ensure_future, self._produce())
        # A task cancelled before its first step never runs _produce's handlers; finishing
        # (idempotent) when it ends guarantees the event stream still closes.
        self._task.add_done_callback(lambda _task: self._finish())
        if self.settings.timeout is not None:
            # One timer for the whole run (not a wait_for per event): it fires even
            # while the consumer is busy rendering.
            self._timer = asyncio.get_running_loop().call_later(
                self.settings.timeout, self._time_out
            )

    def _stop(self, reason: StopReason) -> None:
        if self._stop_reason is None:
            self._stop_reason = reason
        if self._task is not None and not self._task.done():
            self._task.cancel()

    def _emit(self, event: Event) -> None:
        """Hand ``event`` to the listeners and the stream (replaced by ``steps.emit`` at start)."""
        assert self.steps is not None
        self.steps.emit(event)

    async def _produce(self) -> None:
        if self._stop_reason is not None:  # cancelled before it started
            self._finish()
            return
        try:
            await self._run_rounds()
        except asyncio.CancelledError:
            self._finish()
        except KeyboardInterrupt:  # Ctrl-C while the loop runs on the caller's own thread
            self._stop_reason = self._stop_reason or "cancelled"
            self._finish()
            raise
        except BaseException as exc:
            self._stop_reason = self._stop_reason or "error"
            self._error = exc
            self._finish()
            raise
        else:
            self._finish()

    def _finish(self, reply: ModelReply | None = None) -> None:
        """Make the history valid, build the RunResult and close the event stream (idempotent)."""
        steps = self.steps
        if steps is None or steps.result is not None:
            return
        stop = self._stop_reason or steps.stop_reason or "cancelled"
        partial = "".join(self._partial_text)
        try:
            steps.finish(reply, stop, partial=partial, error=self._error)
        finally:
            self._queue.put_nowait(None)  # the stream ends, even if a listener failed

    # -- the rounds --------------------------------------------------------------

    async def _run_rounds(self) -> None:
        steps = self.steps
        assert steps is not None
        settings = self.settings
        strict = settings.strict or strict_from_env(self.spec.env)
        failed_rounds = 0  # consecutive rounds in which every call failed
        tool_only = 0  # consecutive rounds with calls and no text
        round_index = 0
        forced: StopReason | None = None  # why the next request is the forced final one
        # A provider may say what the first request waits for (the embedded model's load).
        note = getattr(self.provider, "status_note", None)
        self._emit(Status((note() if callable(note) else None) or "Analyzing request…"))
        while True:
            if forced is None and round_index >= settings.max_rounds:
                forced = "max_rounds"
            request = steps.next_request(forced=forced)
            if request is None and forced is None and steps.stop_reason in BUDGETS:
                forced = steps.stop_reason  # one last request asks for the answer
                request = steps.next_request(forced=forced)
            if request is None:
                return  # steps.stop_reason says why
            if forced is not None:
                row = STOPS[forced]
                logger.warning(
                    "%s: requesting a final answer without tools",
                    (row.log or "").format(n=round_index),
                )
                self._emit(Status(row.status or ""))
            started = time.perf_counter()
            reply = await self._request(request, round_index)
            if reply.truncated:  # the budget's output cap cut the stream: that is the answer
                self._stop_reason = self._stop_reason or forced or steps.cap_reason
                self._finish(reply)
                return
            if forced or not reply.calls:
                if forced and not reply.text.strip():
                    reply.text = (
                        self._tool_errors_answer(failed_rounds)
                        if forced == "tool_errors"
                        else steps.gathered_summary()
                    )
                verdict = steps.check_output(reply.text)
                if verdict == "retry":
                    assert steps.output is not None
                    self._emit(Status(f"Fixing the answer to match {steps.output.name}…"))
                    continue
                self._stop_reason = self._stop_reason or (
                    (forced or "complete") if verdict == "complete" else verdict
                )
                self._finish(reply)
                return
            tool_round = steps.begin_round(reply)
            results = await self._call_tools(tool_round, round_index)
            tool_round.duration_s = time.perf_counter() - started
            steps.end_round(tool_round, results)  # saved to the history now
            failed = [r for r in tool_round.results if not r.ok]
            logger.info(
                "round %d finished: %d calls, %d failed",
                round_index + 1,
                len(reply.calls),
                len(failed),
            )
            if failed and strict:
                raise ToolError(failed[0].name, failed[0].error or failed[0].content)
            # A round counts once, however many of its parallel calls failed; any
            # success resets the count. The model always sees the errors: reaching
            # the limit forces one more request (without tools) for its answer.
            all_failed = len(failed) == len(tool_round.results)
            failed_rounds = failed_rounds + 1 if all_failed else 0
            tool_only = 0 if reply.text.strip() else tool_only + 1
            round_index += 1
            limit = settings.max_tool_only_rounds
            if failed_rounds >= settings.max_consecutive_errors:
                forced = "tool_errors"
            elif limit and tool_only >= limit:
                forced = "tool_only_rounds"
            elif failed:
                self._emit(Status(statuses.failed_status([r.name for r in failed])))
            else:
                self._emit(Status("Processing tool results…"))

    async def _request(self, request: ModelRequest, round_index: int) -> ModelReply:
        """One model request (retried once without tools if the model refuses them)."""
        steps = self.steps
        assert steps is not None
        forced = request.tool_choice == "none"
        logger.info("round %d: model request (forced final=%s)", round_index + 1, forced)
        started = time.perf_counter()
        if self.paced:
            # A live display redraws before the next request: wait until the reader has
            # handled every event so far (a reader that keeps up costs one loop turn).
            await self._queue.join()
        try:
            reply = await self._send(request, round_index)
        except ProviderError as error:
            if not (request.tools and _refuses_tools(error)) or steps.tools_refused:
                raise
            # A model without tool support: answer in text instead of failing the cell.
            logger.warning("%s; retrying once without tools", error)
            steps.refuse_tools()
            self._emit(Status("This model does not support tools; answering without them…"))
            request = dataclasses.replace(request, tools=[], tool_choice="auto")
            reply = await self._send(request, round_index)
        self._partial_text = []
        logger.debug(
            "model replied in %.3f s: %d calls", time.perf_counter() - started, len(reply.calls)
        )
        if forced and reply.calls:
            logger.warning("model asked for tools after tools were forbidden; ignoring the calls")
        return reply

    async def _send(self, request: ModelRequest, round_index: int) -> ModelReply:
        assert self.steps is not None
        self._partial_text = []

        def on_event(event: ProviderEvent) -> None:
            if isinstance(event, TextChunk) and event.text:
                if not self._partial_text:
                    self._emit(Status("Formulating response…"))
                self._partial_text.append(event.text)
                self._emit(TextDelta(event.text, round_index))

        return await self.steps.send(request, on_event)

    async def _call_tools(self, tool_round: ToolRound, round_index: int) -> list[ToolResult]:
        steps = self.steps
        assert steps is not None
        self._emit(Status(statuses.calls_status(tool_round.calls)))
        for call in tool_round.calls:
            logger.info("call %s %s(%s)", call.id, call.name, call.arguments)
            self._emit(ToolCallStarted(call, round_index))
        status_task = self._start_status_model(tool_round)

        def on_result(result: ToolResult) -> None:
            if steps.pending_round is not tool_round:  # the run already wrapped up this round
                return
            tool_round.results.append(result)
            logger.info(
                "result %s %s: %s in %.3f s",
                result.call_id,
                result.name,
                "ok" if result.ok else f"error: {result.error}",
                result.duration_s,
            )
            self._emit(ToolCallFinished(result, round_index))

        loop = asyncio.get_running_loop()

        def on_progress(call: ToolCall, text: str, fraction: float | None) -> None:
            event = ToolProgress(call.id, text, fraction, round_index)
            try:  # from a tool's worker thread too; a closed loop drops the line
                loop.call_soon_threadsafe(self._emit, event)
            except RuntimeError:
                pass

        try:
            results = await execute_calls(
                tool_round.calls,
                self.tools,
                self.settings,
                inputs=self.spec.inputs,
                on_result=on_result,
                on_progress=on_progress,
            )
        finally:
            if status_task is not None:
                status_task.cancel()
        return results

    def _start_status_model(self, tool_round: ToolRound) -> asyncio.Task[None] | None:
        """Ask the status model for a one-line status while the calls run (2 s at most)."""
        choice = self.settings.status_model
        if choice is None:
            return None
        if self._status_provider is None:
            if isinstance(choice, str):
                from ..providers import get_provider

                self._status_provider = get_provider(choice)
            else:
                self._status_provider = choice
        provider = self._status_provider

        async def ask() -> None:
            line = await statuses.model_status(provider, tool_round.calls)
            if line and self.steps is not None and self.steps.pending_round is tool_round:
                self._emit(Status(line))

        return asyncio.ensure_future(ask())

    def _tool_errors_answer(self, count: int) -> str:
        assert self.steps is not None
        rounds = self.steps.rounds[-count:]
        failures = [f"- {r.name}: {r.error}" for rnd in rounds for r in rnd.results if not r.ok]
        plural = "s" if count != 1 else ""
        head = f"Stopped after {count} consecutive round{plural} of failed tool calls:\n"
        return head + "\n".join(failures)


def _refuses_tools(error: ProviderError) -> bool:
    """The server saying this model cannot take tools.

    Ollama and compatible servers answer 400 ("does not support tools"); llama.cpp's
    server without ``--jinja`` answers 500 or 400 ("tools param requires --jinja
    flag"); OpenRouter answers 404 ("No endpoints found that support tool use").
    """
    text = error.message.lower()
    if "--jinja" in text and error.status in (400, 500):
        return True
    if error.status == 404:
        return "tool" in text and "support" in text and "endpoint" in text
    refused = "support" in text or "not allowed" in text or "enable-auto-tool-choice" in text
    return error.status == 400 and "tool" in text and refused
