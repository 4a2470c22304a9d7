"""The agent loop: one round at a time, stop conditions, events.

A round is one model request plus the execution of the calls it returned. The
loop appends to the conversation as it goes (the user message, then an
assistant message whose ``rounds`` grow), and whatever ends the run it leaves
the history valid: every call has exactly one result.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._internal.deadline import context_with_deadline
from .._internal.images import Image
from ..errors import ProviderError, ToolError
from ..events import (
    Event,
    RoundFinished,
    RunFinished,
    RunStarted,
    Status,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolProgress,
)
from ..messages import Conversation, Message, ToolCall, ToolResult, ToolRound, Usage
from ..providers import accepts_images
from ..providers.base import ModelRequest, Provider, TextChunk
from ..results import RunResult, stop_reason_words
from ..tools import (
    PER_CALL_CHARS,
    PER_ROUND_CHARS,
    Approver,
    Middleware,
    Tool,
)
from . import status as statuses
from .status import title_case
from .steps import (
    FINAL_ANSWER_INSTRUCTION,
    ModelReply,
    RequestPlanner,
    execute_calls,
    send_request,
)

logger = logging.getLogger("nbagent")

FINAL_STATUS = {
    "max_rounds": statuses.MAX_ROUNDS_STATUS,
    "tool_errors": "Tools keep failing. Generating final response…",
    "token_budget": "Token budget reached. Generating final response…",
    "tool_only_rounds": "Too many rounds without text. Generating final response…",
}

_FINAL_LOG = {
    "max_rounds": "Maximum tool rounds reached ({n})",
    "tool_errors": "Tool calls failed in the last rounds ({n} rounds run)",
    "token_budget": "Token budget reached after {n} rounds",
    "tool_only_rounds": "{n} rounds of tool calls without text",
}

_STOP_NOTES = {
    "timeout": "[run timed out]",
    "cancelled": "[run cancelled]",
    "token_budget": "[stopped: token budget reached]",
    "cost_budget": "[stopped: cost budget reached]",
    "output_invalid": "[stopped: the answer never matched the output type]",
    "error": "[run failed]",
    "context_window": "[stopped: the conversation no longer fits the context window]",
}


@dataclass
class LoopSettings:
    """Limits and options of one run (see DESIGN's stop-condition table)."""

    max_rounds: int = 10
    max_consecutive_errors: int = 3
    timeout: float | None = 300.0
    max_total_tokens: int | None = None
    strict: bool = False
    stream: bool = True
    tool_timeout: float = 60.0
    per_call_chars: int = PER_CALL_CHARS
    per_round_chars: int = PER_ROUND_CHARS
    approver: Approver | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    images: bool = True
    """False: images in tool results reach the model as a text placeholder."""
    context: str | None = None
    """Text added to the system message of this run's requests (the kernel inventory)."""
    attachments: list[Image] | None = None
    """Images sent with this run's prompt (``{fig}``)."""
    max_cost: float | None = None
    """USD: stop before a request whose estimated price would exceed it (``nbagent.cost``)."""
    output_type: Any = None
    """The type of ``result.output`` (``nbagent.run.output``); None for the answer text."""
    text_tool_calls: bool = True
    """Recognise tool calls written as text (and ``<think>`` blocks) in replies."""
    status_model: str | Provider | None = None
    """A model writing one-line statuses ("Looking up the weather in Oslo"), 2 s at most."""
    tool_middleware: Sequence[Middleware] = field(default_factory=tuple)
    """Functions wrapping every tool call (``nbagent.tools.cache``, ``rate_limit``...)."""
    context_window: int | None = None
    """The model's context window in tokens (default: the table in ``nbagent.run.budget``)."""
    max_tool_only_rounds: int | None = None
    """Force the final answer after this many consecutive rounds of calls without text."""


LOOP_OPTIONS = frozenset(
    ("text_tool_calls", "status_model", "tool_middleware", "context_window",
     "max_tool_only_rounds")
)  # fmt: skip
"""LoopSettings fields an Agent takes as keyword options without a parameter of its own."""

__all__ = ["FINAL_ANSWER_INSTRUCTION", "LOOP_OPTIONS", "LoopSettings", "Run", "title_case"]


def strict_from_env() -> bool:
    """``NBAGENT_STRICT=1``: every run is strict (a failing tool raises ToolError)."""
    return os.environ.get("NBAGENT_STRICT", "").strip().lower() in ("1", "true", "yes", "on")


class Run:
    """One run of the loop. Iterate :meth:`events`; :meth:`cancel` stops it."""

    def __init__(
        self,
        provider: Provider,
        conversation: Conversation,
        prompt: str,
        tools: Mapping[str, Tool],
        settings: LoopSettings,
        *,
        model_label: str | None = None,
    ) -> None:
        self.provider = provider
        self.conversation = conversation
        self.prompt = prompt
        self.tools = tools
        self.settings = settings
        self.model_label = model_label or f"{provider.name}:{provider.model}"
        self.message = Message(role="assistant", content="", rounds=[], model=self.model_label)
        self.usage = Usage()
        self.result: RunResult | None = None
        self._stop_reason: str | None = None
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._started = time.perf_counter()
        self._partial_text: list[str] = []
        self._pending_round: ToolRound | None = None
        self._error: BaseException | None = None
        self._call_ids: set[str] = set()
        self._planner = RequestPlanner(settings, provider)
        self._tools_refused = False
        self._notes: list[str] = []
        self._status_provider: Provider | None = None
        self.output: Any = None  # an nbagent.run.output.OutputSpec (imported only when used)
        if settings.output_type is not None:
            from .output import OutputSpec

            self.output = OutputSpec(settings.output_type)
        self._output_value: Any = None
        self._output_retry: tuple[str, str] | None = None  # (rejected answer, feedback)
        self._output_attempts = 0

    # -- public ------------------------------------------------------------------

    async def events(self) -> AsyncGenerator[Event, None]:
        """Run the loop, yielding events; the last event is always RunFinished."""
        self._start()
        assert self._task is not None
        timer = None
        if self.settings.timeout is not None:
            # One timer for the whole run (not a wait_for per event): it fires even
            # while the consumer is busy rendering.
            timer = asyncio.get_running_loop().call_later(self.settings.timeout, self._time_out)
        try:
            while True:
                event = await self._queue.get()
                if event is None:
                    break
                yield event
                self._queue.task_done()  # the consumer came back for more: it handled this one
        finally:
            if timer is not None:
                timer.cancel()
            if not self._task.done():
                # The consumer went away (Stop button, KeyboardInterrupt, break).
                self._stop("cancelled")
                self._finish()
        if not self._task.cancelled():  # cancelled before its first step: nothing to raise
            await self._task  # re-raise provider errors / ToolError after history is valid

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

    # -- steps -------------------------------------------------------------------

    def _start(self) -> None:
        images = list(self.settings.attachments or ())
        self.conversation.messages.append(Message("user", self.prompt, images=images))
        self.conversation.messages.append(self.message)
        self._emit(RunStarted(self.prompt, self.model_label, self.conversation.id))
        logger.info("run started: model=%s tools=%s", self.model_label, sorted(self.tools))
        # The run's deadline rides in its task's context: retries and tools see what is left.
        context = context_with_deadline(self.settings.timeout)
        self._task = context.run(asyncio.ensure_future, self._produce())
        # A task cancelled before its first step never runs _produce's handlers; finishing
        # (idempotent) when it ends guarantees the event stream still closes.
        self._task.add_done_callback(lambda _task: self._finish())

    def _stop(self, reason: str) -> None:
        if self._stop_reason is None:
            self._stop_reason = reason
        if self._task is not None and not self._task.done():
            self._task.cancel()

    def _emit(self, event: Event) -> None:
        self._queue.put_nowait(event)

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

    async def _run_rounds(self) -> None:
        settings = self.settings
        strict = settings.strict or strict_from_env()
        failed_rounds = 0  # consecutive rounds in which every call failed
        tool_only = 0  # consecutive rounds with calls and no text
        round_index = 0
        forced: str | None = None  # why the next request is the forced final one
        # A provider may say what the first request waits for (the embedded model's load).
        note = getattr(self.provider, "status_note", None)
        self._emit(Status((note() if callable(note) else None) or "Analyzing request…"))
        while True:
            if forced is None and round_index >= settings.max_rounds:
                forced = "max_rounds"
            request = self._next_request(forced)
            if request is None and forced is None and settings.max_total_tokens is not None:
                forced = "token_budget"  # one last request asks for the answer
                request = self._next_request(forced)
            if request is None:
                self._stop_reason = self._stop_reason or "token_budget"
                return
            if self._over_cost_budget():
                self._stop_reason = "cost_budget"
                return
            if forced is not None:
                why = _FINAL_LOG[forced].format(n=round_index)
                logger.warning("%s: requesting a final answer without tools", why)
                self._emit(Status(FINAL_STATUS[forced]))
            started = time.perf_counter()
            text, calls, usage, provider_data = await self._request(request, round_index)
            if self.output is not None:
                calls, answer = self.output.take_answer(calls)
                text = text if answer is None else answer
            if forced or not calls:
                if forced and not text.strip():
                    text = (
                        self._tool_errors_answer(failed_rounds)
                        if forced == "tool_errors"
                        else self._gathered_summary()
                    )
                verdict = "complete" if self.output is None else self._check_output(text)
                if verdict == "retry":
                    continue
                self.message.content = text
                self.message.provider_data = provider_data
                self._stop_reason = (forced or "complete") if verdict == "complete" else verdict
                return
            tool_round = ToolRound(text or None, calls, [], usage, 0.0, provider_data)
            await self._call_tools(tool_round, round_index)
            tool_round.duration_s = time.perf_counter() - started
            self._emit(RoundFinished(tool_round, round_index))
            failed = [r for r in tool_round.results if not r.ok]
            logger.info(
                "round %d finished: %d calls, %d failed", round_index + 1, len(calls), len(failed)
            )
            if failed and strict:
                raise ToolError(failed[0].name, failed[0].error or failed[0].content)
            # A round counts once, however many of its parallel calls failed; any
            # success resets the count. The model always sees the errors: reaching
            # the limit forces one more request (without tools) for its answer.
            all_failed = len(failed) == len(tool_round.results)
            failed_rounds = failed_rounds + 1 if all_failed else 0
            tool_only = 0 if text.strip() else tool_only + 1
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

    def _next_request(self, forced: str | None) -> ModelRequest | None:
        """The next request, fitted to the context window and the token budget (or None)."""
        tools = [] if self._tools_refused else [t.spec for t in self.tools.values()]
        spent = self.usage.total_tokens
        context = self.settings.context  # the kernel inventory joins the system message
        system = "\n\n".join(p for p in (self.conversation.system, context) if p) or None
        messages = self.conversation.messages
        if self._output_retry is not None:  # the rejected answer, then what is wrong with it
            self.message.content = self._output_retry[0]
            messages = [*messages, Message(role="user", content=self._output_retry[1])]
        view = Conversation(self.conversation.id, system, messages)
        request = self._planner.build(view, tools, spent=spent, forced=forced)
        if request is None and self._planner.overflow:
            self._stop_reason = "context_window"
        if request is None:
            return None
        request.images = self.settings.images and accepts_images(self.provider)
        if self.output is not None:
            request = self.output.prepare(request, self.provider, forced=forced is not None)
        return request

    async def _request(
        self, request: ModelRequest, round_index: int
    ) -> tuple[str, list[ToolCall], Usage, dict[str, Any] | None]:
        """One model request; returns its text, complete calls, usage and opaque data."""
        forced = request.tool_choice == "none"
        logger.info("round %d: model request (forced final=%s)", round_index + 1, forced)
        started = time.perf_counter()
        # The request waits until the consumer has handled every event emitted so far,
        # however long it takes over each: the history writer has then saved the prompt
        # and every finished round, so a crash during this request loses only this round.
        # (A consumer that keeps up costs one event-loop turn, as asyncio.sleep(0) did.)
        await self._queue.join()
        try:
            reply = await self._send(request, round_index)
        except ProviderError as error:
            if not (request.tools and _refuses_tools(error)) or self._tools_refused:
                raise
            # A model without tool support: answer in text instead of failing the cell.
            logger.warning("%s; retrying once without tools", error)
            self._tools_refused = True
            self._notes.append(statuses.TOOLS_REFUSED_NOTE)
            self._emit(Status("This model does not support tools; answering without them…"))
            request = dataclasses.replace(request, tools=[], tool_choice="auto")
            reply = await self._send(request, round_index)
        finally:
            if self._output_retry is not None:
                self.message.content = ""  # the rejected answer was only lent to the request
        calls, usage, provider_data = reply.calls, reply.usage, reply.provider_data
        if usage.total_tokens:  # the provider reported usage: dollars from genai-prices
            from ..cost import price

            usage.cost = price(self.provider, usage)
        self._planner.learn(request, usage)
        self.usage = self.usage + usage
        self.message.usage = self.usage
        text = "".join(self._partial_text)
        self._partial_text = []
        logger.debug("model replied in %.3f s: %d calls", time.perf_counter() - started, len(calls))
        if forced and calls:
            logger.warning("model asked for tools after tools were forbidden; ignoring the calls")
        return text, calls, usage, provider_data

    async def _send(self, request: ModelRequest, round_index: int) -> ModelReply:
        self._partial_text = []

        def on_event(event: Any) -> None:
            if isinstance(event, TextChunk) and event.text:
                if not self._partial_text:
                    self._emit(Status("Formulating response…"))
                self._partial_text.append(event.text)
                self._emit(TextDelta(event.text, round_index))

        return await send_request(self.provider, request, on_event, seen_ids=self._call_ids)

    async def _call_tools(self, tool_round: ToolRound, round_index: int) -> None:
        assert self.message.rounds is not None
        self._pending_round = tool_round
        self.message.rounds.append(tool_round)
        self._emit(Status(statuses.calls_status(tool_round.calls)))
        for call in tool_round.calls:
            logger.info("call %s %s(%s)", call.id, call.name, call.arguments)
            self._emit(ToolCallStarted(call, round_index))
        status_task = self._start_status_model(tool_round)

        def on_result(result: ToolResult) -> None:
            if self._pending_round is not tool_round:  # the run already wrapped up this round
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
                on_result=on_result,
                on_progress=on_progress,
            )
        finally:
            if status_task is not None:
                status_task.cancel()
        tool_round.results = results
        self._pending_round = None

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
            if line and self._pending_round is tool_round:
                self._emit(Status(line))

        return asyncio.ensure_future(ask())

    def _check_output(self, text: str) -> str:
        """Validate a final answer: "complete" (value kept), "retry" or "output_invalid"."""
        from .output import RETRIES

        assert self.output is not None
        value, error = self.output.validate(text)
        if error is None:
            self._output_value, self._output_retry = value, None
            return "complete"
        self._output_attempts += 1
        logger.info("answer rejected (%d): %s", self._output_attempts, error)
        if self._output_attempts > RETRIES:
            self._output_retry = None
            return "output_invalid"
        self._output_retry = (text, self.output.feedback(error, self.provider))
        self._emit(Status(f"Fixing the answer to match {self.output.name}…"))
        return "retry"

    def _over_cost_budget(self) -> bool:
        """Whether what was spent plus the next request's estimated input exceeds max_cost."""
        if self.settings.max_cost is None:
            return False
        from ..cost import budget_stop

        tools = [t.spec for t in self.tools.values()]
        head = budget_stop(
            self.settings.max_cost, self.usage.cost, self.provider, self.conversation, tools
        )
        if head is None:
            return False
        self.message.content = head + (
            "\n" + self._gathered_summary() if self.message.rounds else ""
        )
        return True

    def _tool_errors_answer(self, count: int) -> str:
        rounds = (self.message.rounds or [])[-count:]
        failures = [f"- {r.name}: {r.error}" for rnd in rounds for r in rnd.results if not r.ok]
        plural = "s" if count != 1 else ""
        head = f"Stopped after {count} consecutive round{plural} of failed tool calls:\n"
        return head + "\n".join(failures)

    def _gathered_summary(self) -> str:
        """The forced final answer when the model gave no text: what the tools returned."""
        rounds = self.message.rounds or []
        lines = [f"Stopped after {len(rounds)} tool rounds without a final answer. Tool results:"]
        for rnd in rounds:
            for r in rnd.results:
                first_line = (r.content.splitlines() or [""])[0][:200]
                lines.append(f"- {r.name}: {first_line}")
        return "\n".join(lines)

    def _finish(self) -> None:
        """Make the history valid, build the RunResult and close the event stream (idempotent)."""
        if self.result is not None:
            return
        stop_reason = self._stop_reason or "cancelled"
        self._complete_pending_round(stop_reason)
        if stop_reason in _STOP_NOTES and not self.message.content:
            partial = "".join(self._partial_text)
            note = _STOP_NOTES[stop_reason]
            if self._error is not None:
                note = f"[run failed: {type(self._error).__name__}: {self._error}]"
            self.message.content = (partial + "\n\n" if partial else "") + note
        self.message.stop_reason = stop_reason
        self.message.usage = self.usage
        rounds = self.message.rounds or []
        typed = self.output is not None
        self.result = RunResult(
            output=self._output_value if typed else self.message.content,
            text=self.message.content,
            output_type=self.settings.output_type,
            rounds=rounds,
            stop_reason=stop_reason,
            usage=self.usage,
            model=self.model_label,
            conversation_id=self.conversation.id,
            elapsed_s=time.perf_counter() - self._started,
            message=self.message,
            notes=[n for n in (*self._notes, self._planner.context_note()) if n],
        )
        if stop_reason != "complete":
            self._emit(Status(f"Stopped: {stop_reason_words(stop_reason)}"))
        logger.info(
            "run finished: stop_reason=%s rounds=%d tokens=%d",
            stop_reason,
            len(rounds),
            self.usage.total_tokens,
        )
        self._emit(RunFinished(self.result))
        self._queue.put_nowait(None)

    def _complete_pending_round(self, stop_reason: str) -> None:
        """Give every call without a result a synthetic error result (history invariant)."""
        tool_round = self._pending_round
        if tool_round is None:
            return
        by_id = {r.call_id: r for r in tool_round.results}
        word = "timed out" if stop_reason == "timeout" else "cancelled"
        error = f"not run: the run was {word}"
        tool_round.results = [
            by_id.get(call.id) or ToolResult(call.id, call.name, False, f"Error: {error}", error)
            for call in tool_round.calls
        ]
        self._pending_round = None


def _refuses_tools(error: ProviderError) -> bool:
    """A 400 saying the model cannot take tools (Ollama, some compatible servers)."""
    text = error.message.lower()
    refused = "support" in text or "not allowed" in text or "enable-auto-tool-choice" in text
    return error.status == 400 and "tool" in text and refused
