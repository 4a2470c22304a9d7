"""The agent loop: one round at a time, stop conditions, events.

A round is one model request plus the execution of the calls it returned. The
loop appends to the conversation as it goes (the user message, then an
assistant message whose ``rounds`` grow), and whatever ends the run it leaves
the history valid: every call has exactly one result.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Any

from .deadline import context_with_deadline
from .errors import ToolError
from .events import (
    Event,
    RoundFinished,
    RunFinished,
    RunStarted,
    Status,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from .images import Image, accepts_images
from .messages import Conversation, Message, ToolCall, ToolResult, ToolRound, Usage, new_id
from .providers.base import (
    Finished,
    ModelRequest,
    Provider,
    TextChunk,
    ToolCallReady,
    UsageReport,
)
from .results import RunResult, stop_reason_words
from .tools import PER_CALL_CHARS, PER_ROUND_CHARS, Approver, Tool, execute_round

logger = logging.getLogger("nbagent")

FINAL_ANSWER_INSTRUCTION = (
    "You have used the maximum number of tool rounds. Do not call any more tools. "
    "Answer the user's request now, as well as you can, from the information gathered so far."
)

_STOP_NOTES = {
    "timeout": "[run timed out]",
    "cancelled": "[run cancelled]",
    "token_budget": "[stopped: token budget reached]",
    "error": "[run failed]",
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


def title_case(name: str) -> str:
    """``weather_lookup`` -> ``Weather Lookup`` (for status lines)."""
    words = name.replace("-", "_").replace(".", "_").split("_")
    return " ".join(w[:1].upper() + w[1:] for w in words if w)


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
        consecutive_errors = 0
        round_index = 0
        # A provider may say what the first request waits for (the embedded model's load).
        note = getattr(self.provider, "status_note", None)
        self._emit(Status((note() if callable(note) else None) or "Analyzing request…"))
        while True:
            if self._over_token_budget():
                self._stop_reason = "token_budget"
                return
            forced = round_index >= settings.max_rounds
            started = time.perf_counter()
            text, calls, usage, provider_data = await self._request(round_index, forced=forced)
            if forced or not calls:
                if forced and not text.strip():
                    text = self._gathered_summary()
                self.message.content = text
                self.message.provider_data = provider_data
                self._stop_reason = "max_rounds" if forced else "complete"
                return
            tool_round = ToolRound(text or None, calls, [], usage, 0.0, provider_data)
            await self._call_tools(tool_round, round_index)
            tool_round.duration_s = time.perf_counter() - started
            self._emit(RoundFinished(tool_round, round_index))
            logger.info(
                "round %d finished: %d calls, %d failed",
                round_index + 1,
                len(calls),
                sum(not r.ok for r in tool_round.results),
            )
            for result in tool_round.results:
                consecutive_errors = 0 if result.ok else consecutive_errors + 1
                if not result.ok and settings.strict:
                    raise ToolError(result.name, result.error or result.content)
            if consecutive_errors >= settings.max_consecutive_errors:
                self._stop_reason = "tool_errors"
                self.message.content = self._tool_errors_answer(consecutive_errors)
                return
            round_index += 1
            self._emit(Status("Processing tool results…"))

    async def _request(
        self, round_index: int, *, forced: bool
    ) -> tuple[str, list[ToolCall], Usage, dict[str, Any] | None]:
        """One model request; returns its text, complete calls, usage and opaque data."""
        settings = self.settings
        request = ModelRequest(
            system="\n\n".join(p for p in (self.conversation.system, settings.context) if p)
            or None,
            messages=self.conversation.messages,
            tools=[t.spec for t in self.tools.values()],
            tool_choice="none" if forced else "auto",
            final_instruction=FINAL_ANSWER_INSTRUCTION if forced else None,
            stream=settings.stream,
            max_output_tokens=settings.max_output_tokens,
            temperature=settings.temperature,
            images=settings.images and accepts_images(self.provider.model),
        )
        logger.info("round %d: model request (forced final=%s)", round_index + 1, forced)
        self._partial_text = []
        calls: list[ToolCall] = []
        usage = Usage()
        provider_data: dict[str, Any] | None = None
        started = time.perf_counter()
        # The request waits until the consumer has handled every event emitted so far,
        # however long it takes over each: the history writer has then saved the prompt
        # and every finished round, so a crash during this request loses only this round.
        # (A consumer that keeps up costs one event-loop turn, as asyncio.sleep(0) did.)
        await self._queue.join()
        stream = self.provider.stream(request)
        try:
            async for event in stream:
                self._on_provider_event(event, round_index, calls)
                if isinstance(event, UsageReport):
                    usage = event.usage  # cumulative within a request: replace, never add
                elif isinstance(event, Finished):
                    provider_data = event.provider_data
        finally:
            # A cancelled run closes the HTTP stream now, not at garbage collection.
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        self.usage = self.usage + usage

        self.message.usage = self.usage
        text = "".join(self._partial_text)
        self._partial_text = []
        logger.debug("model replied in %.3f s: %d calls", time.perf_counter() - started, len(calls))
        if forced and calls:
            logger.warning("model asked for tools after tools were forbidden; ignoring the calls")
        return text, calls, usage, provider_data

    def _on_provider_event(self, event: Any, round_index: int, calls: list[ToolCall]) -> None:
        if isinstance(event, TextChunk):
            if event.text:
                if not self._partial_text:
                    self._emit(Status("Formulating response…"))
                self._partial_text.append(event.text)
                self._emit(TextDelta(event.text, round_index))
        elif isinstance(event, ToolCallReady):
            call = event.call
            # Results are matched to calls by id: a missing or repeated id (some local
            # servers number every call "call_0") would break the history invariant.
            if not call.id or call.id in self._call_ids:
                call.id = new_id("call_")
            self._call_ids.add(call.id)
            calls.append(call)

    async def _call_tools(self, tool_round: ToolRound, round_index: int) -> None:
        assert self.message.rounds is not None
        self._pending_round = tool_round
        self.message.rounds.append(tool_round)
        names = list(dict.fromkeys(title_case(c.name) for c in tool_round.calls))
        self._emit(Status(f"Using {' and '.join(names)}…"))
        for call in tool_round.calls:
            logger.info("call %s %s(%s)", call.id, call.name, call.arguments)
            self._emit(ToolCallStarted(call, round_index))

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

        settings = self.settings
        results = await execute_round(
            tool_round.calls,
            self.tools,
            approver=settings.approver,
            default_timeout=settings.tool_timeout,
            per_call_chars=settings.per_call_chars,
            per_round_chars=settings.per_round_chars,
            on_result=on_result,
        )
        tool_round.results = results
        self._pending_round = None

    def _over_token_budget(self) -> bool:
        budget = self.settings.max_total_tokens
        if budget is None:
            return False
        rounds = self.message.rounds or []
        # The next request costs at least what the last one took as input.
        last_input = rounds[-1].usage.input_tokens if rounds else 0
        return self.usage.total_tokens + last_input > budget or self.usage.total_tokens >= budget

    def _tool_errors_answer(self, count: int) -> str:
        failures = [
            f"- {r.name}: {r.error}"
            for rnd in (self.message.rounds or [])
            for r in rnd.results
            if not r.ok
        ][-count:]
        return f"Stopped after {count} consecutive failed tool calls:\n" + "\n".join(failures)

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
        self.result = RunResult(
            output=self.message.content,
            rounds=rounds,
            stop_reason=stop_reason,
            usage=self.usage,
            model=self.model_label,
            conversation_id=self.conversation.id,
            elapsed_s=time.perf_counter() - self._started,
            message=self.message,
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
