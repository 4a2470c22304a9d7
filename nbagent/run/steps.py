"""The loop's pieces, public: drive the rounds yourself.

The automatic loop (:class:`nbagent.run.loop.Run`) is built on these pieces; use them
directly to decide between rounds yourself (inspect the calls, skip some, stop
early, log)::

    steps = agent.steps("Weather in Oslo?")         # settings as for agent.run(...)
    while True:
        request = steps.next_request()             # budgets, context window, cost cap
        if request is None:                        # steps.stop_reason says why
            break
        reply = await steps.send(request)           # the model's text and calls
        if not reply.requires_tool_execution:
            break
        results = await steps.execute(reply)        # the agent's tools, approval, middleware
        steps.append_round(reply, results)          # the round joins the conversation (and history)
    result = steps.finish(reply)                    # a RunResult, like agent.run's

``send_sync`` and ``execute_sync`` are the same steps for synchronous code.

* :class:`~nbagent.run.planner.RequestPlanner`: fits a request to the context window
  and the token budget;
* :func:`send_request`: one request, its events passed on, a :class:`ModelReply` back;
* :func:`execute_calls`: one round's calls with the tools, approval, timeouts,
  output budget, middleware, retries and progress;
* :class:`Steps`: one run's state (its messages, usage, typed output, history and
  trace hooks) and the one place a run's requests are assembled.
"""

from __future__ import annotations

import logging
import math
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..events import Event, RoundFinished, RunFinished, RunStarted, Status
from ..messages import Conversation, Message, ToolCall, ToolResult, ToolRound, Usage, new_id
from ..providers import accepts_images
from ..providers.base import (
    Finished,
    ModelRequest,
    Provider,
    ProviderEvent,
    TextChunk,
    ToolCallReady,
    UsageReport,
)
from ..results import RunResult
from ..tools import Tool, execute_round, wrap_call
from .planner import RequestPlanner
from .settings import RunInputs, RunSettings
from .status import TOOLS_REFUSED_NOTE
from .stops import STOPS, StopReason, stop_reason_words
from .streamed import BYTES_PER_TOKEN, CUT_STREAM_NOTE, StreamedBytes

if TYPE_CHECKING:
    from .output import OutputSpec

__all__ = [
    "ModelReply",
    "RequestPlanner",
    "Steps",
    "execute_calls",
    "send_request",
]

logger = logging.getLogger("nbagent")

NO_INPUTS = RunInputs()

ESTIMATED_NOTE = "tokens estimated: the server reported no usage"


_REFUSED_TOOLS: weakref.WeakSet[Any] = weakref.WeakSet()
"""Providers whose model refused tools: their later runs send none (a new model or
``use_model`` builds a new provider, which tries again)."""

ProgressCallback = Callable[[ToolCall, str, "float | None"], None]
Listener = Callable[[Event], None]
"""Sees every event of a run as it happens (the history writer, the tracer, a queue)."""
OnProviderEvent = Callable[[ProviderEvent], None]
"""Sees each provider event of a request as it arrives (text chunks, calls, usage)."""
Verdict = Literal["complete", "retry", "output_invalid"]


@dataclass
class ModelReply:
    """What one model request returned."""

    text: str
    calls: list[ToolCall]
    usage: Usage
    provider_data: dict[str, Any] | None = None
    truncated: bool = False
    """The stream was cut at the budget's output cap (its calls, if any, are dropped)."""
    output_bytes: int = 0
    """UTF-8 bytes of the reply's text and call arguments (for a usage estimate)."""

    @property
    def requires_tool_execution(self) -> bool:
        """True when the model asked for tool calls (run them, then send again)."""
        return bool(self.calls)


async def send_request(
    provider: Provider,
    request: ModelRequest,
    on_event: OnProviderEvent | None = None,
    *,
    seen_ids: set[str] | None = None,
    max_output: int | None = None,
    streamed: StreamedBytes | None = None,
) -> ModelReply:
    """Send ``request``; each provider event goes to ``on_event`` as it arrives.

    Calls without an id, or with one already used in this run (``seen_ids``), get a
    fresh id: results are matched to calls by id. ``max_output`` (tokens, estimated
    on the high side as UTF-8 bytes / 3) cuts a stream that passes it (a server that
    ignores ``max_tokens``): the reply keeps its text up to the cap, no call, and
    ``truncated`` is set. ``streamed`` counts the output bytes (and outlives a cancel).
    """
    seen = seen_ids if seen_ids is not None else set()
    text: list[str] = []
    calls: list[ToolCall] = []
    usage = Usage()
    provider_data: dict[str, Any] | None = None
    room = None if max_output is None else max_output * BYTES_PER_TOKEN
    out = streamed if streamed is not None else StreamedBytes(request)
    truncated = False
    stream = provider.stream(request)
    try:
        async for event in stream:
            if isinstance(event, TextChunk):
                size = len(event.text.encode("utf-8"))
                if room is not None and out.count + size > room:
                    kept = event.text.encode("utf-8")[: room - out.count].decode("utf-8", "ignore")
                    out.count += len(kept.encode("utf-8"))
                    if kept and on_event is not None:
                        on_event(TextChunk(kept))
                    text.append(kept)
                    truncated = True
                    break
                out.count += size
                text.append(event.text)
            elif isinstance(event, ToolCallReady):
                call = event.call
                out.count += len((call.raw_arguments or "").encode("utf-8")) + len(call.name)
                if room is not None and out.count > room:
                    truncated = True
                    break
                if not call.id or call.id in seen:  # "call_0" every time, from some servers
                    call.id = new_id("call_")
                seen.add(call.id)
                calls.append(call)
            elif isinstance(event, UsageReport):
                usage = event.usage  # cumulative within a request: replace, never add
            elif isinstance(event, Finished):
                provider_data = event.provider_data
            if on_event is not None:
                on_event(event)
    finally:
        # A cancelled run closes the HTTP stream now, not at garbage collection.
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
    if truncated:
        logger.warning("reply cut at %d output tokens (the budget's cap)", max_output)
        calls = []  # a cut reply's calls may be incomplete: none runs
    return ModelReply("".join(text), calls, usage, provider_data, truncated, out.count)


async def execute_calls(
    calls: list[ToolCall],
    tools: Mapping[str, Tool],
    settings: RunSettings,
    *,
    inputs: RunInputs = NO_INPUTS,
    on_result: Callable[[ToolResult], None] | None = None,
    on_progress: ProgressCallback | None = None,
) -> list[ToolResult]:
    """Run one round's calls with ``settings``' approval, timeouts, output budget and middleware.

    ``on_progress(call, text, fraction)`` gets every progress line (generator tools,
    ``nbagent.progress``, retries), possibly from a tool's worker thread.
    """

    def wrap(t: Tool, call: ToolCall) -> Tool:
        report = None
        if on_progress is not None:

            def report(text: str, fraction: float | None) -> None:
                on_progress(call, text, fraction)

        return wrap_call(t, call, settings.tool_middleware, report)

    return await execute_round(
        calls,
        tools,
        approver=settings.approver,
        default_timeout=settings.tool_timeout,
        per_call_chars=inputs.per_call_chars,
        per_round_chars=inputs.per_round_chars,
        on_result=on_result,
        wrap=wrap,
    )


@dataclass(frozen=True)
class RunSpec:
    """What one run is made of, and who hears its events (history, traces, a reader)."""

    provider: Provider
    conversation: Conversation
    prompt: str
    tools: Mapping[str, Tool]
    settings: RunSettings
    inputs: RunInputs = NO_INPUTS
    model_label: str | None = None
    listeners: Sequence[Listener] = ()
    env: Mapping[str, str] | None = None
    """Where ``NBAGENT_*`` settings are read (``Agent(env=...)``); None: the process's."""

    @property
    def label(self) -> str:
        """The model string shown for the run ("openai:gpt-4o")."""
        return self.model_label or f"{self.provider.name}:{self.provider.model}"


def _refused_before(provider: Provider) -> bool:
    try:
        return provider in _REFUSED_TOOLS
    except TypeError:  # an unhashable provider is never remembered
        return False


class Steps:
    """One run, a step at a time: its state, and the one place its requests are assembled.

    Creating it appends the prompt (and an in-progress assistant message) to the
    conversation and tells the listeners the run started; every method keeps the
    history valid; :meth:`finish` ends the run and returns its RunResult. Get one from
    :meth:`nbagent.Agent.steps` (with the agent's settings, kernel context, history,
    tracing and busy lock); the automatic loop drives one the same way.
    """

    def __init__(
        self, spec: RunSpec, *, on_finish: Sequence[Callable[[RunResult], None]] = ()
    ) -> None:
        self.spec = spec
        self.provider = spec.provider
        self.conversation = spec.conversation
        self.prompt = spec.prompt
        self.tools = spec.tools
        self.settings = settings = spec.settings
        self.inputs = spec.inputs
        self.model = spec.label
        self.listeners = list(spec.listeners)
        self._on_finish = list(on_finish)
        self.planner = RequestPlanner(settings, self.provider)
        self.specs = [t.spec for t in spec.tools.values()]
        """The tool specs offered, built once per run."""
        self.message = Message(role="assistant", content="", rounds=[], model=self.model)
        self.usage = Usage()
        self.result: RunResult | None = None
        self.stop_reason: StopReason | None = None
        """Why :meth:`next_request` returned None, or why the run stopped."""
        self.pending_round: ToolRound | None = None
        """A round whose calls are running (given "not run" results if the run ends)."""
        self.tools_refused = _refused_before(self.provider)
        """The model refused tools (in this run or an earlier one of the same provider
        object, that is the agent's next run): requests go without them."""
        self.notes: list[str] = []
        self._in_flight: StreamedBytes | None = None  # the request being streamed
        if self.tools_refused and self.specs:
            self.notes.append(TOOLS_REFUSED_NOTE)
        self.output_cap: int | None = None
        """The output tokens the budgets leave the next request (its stream is cut past it)."""
        self.cap_reason: StopReason | None = None
        """Which budget set ``output_cap``: "token_budget" or "cost_budget"."""
        self.output: OutputSpec | None = None  # nbagent.run.output, imported only when used
        if settings.output_type is not None:
            from .output import OutputSpec

            self.output = OutputSpec(settings.output_type)
        self._output_value: Any = None
        self._output_retry: tuple[str, str] | None = None  # (rejected answer, feedback)
        self._output_attempts = 0
        self._seen_ids: set[str] = set()
        self._started = time.perf_counter()
        user = Message("user", spec.prompt, images=list(spec.inputs.attachments))
        spec.conversation.messages += [user, self.message]
        self.emit(RunStarted(spec.prompt, self.model, spec.conversation.id))

    def refuse_tools(self) -> None:
        """The model refused tools: later requests go without them, in later runs too.

        Remembered per provider object (the agent's), not per model name.
        """
        self.tools_refused = True
        try:
            _REFUSED_TOOLS.add(self.provider)
        except TypeError:  # an unhashable or non-weakrefable provider: this run only
            pass
        if TOOLS_REFUSED_NOTE not in self.notes:
            self.notes.append(TOOLS_REFUSED_NOTE)

    @property
    def rounds(self) -> list[ToolRound]:
        """The rounds appended so far."""
        if self.message.rounds is None:
            self.message.rounds = []
        return self.message.rounds

    def emit(self, event: Event) -> None:
        """Hand ``event`` to every listener (history, trace, the event stream) now."""
        for listener in self.listeners:
            listener(event)

    # -- requests ----------------------------------------------------------------------

    def next_request(
        self, *, final: bool = False, forced: StopReason | None = None
    ) -> ModelRequest | None:
        """The next request, or None (``stop_reason`` says why: budget, window or cost).

        ``final=True`` forbids tools and asks for the answer (as at ``max_rounds``);
        ``forced`` names the stop reason whose final-answer instruction to send.
        """
        forced = forced or ("max_rounds" if final else None)
        tools = [] if self.tools_refused else self.specs
        context = self.inputs.context  # the kernel inventory joins the system message
        system = "\n\n".join(p for p in (self.conversation.system, context) if p) or None
        messages = self.conversation.messages
        if self._output_retry is not None:  # the rejected answer, then what is wrong with it
            messages = [*messages, Message(role="user", content=self._output_retry[1])]
        view = Conversation(self.conversation.id, system, messages)
        spent = self.usage.total_tokens
        request = self.planner.build(view, tools, spent=spent, forced=forced)
        if request is None:
            self.stop_reason = "context_window" if self.planner.overflow else "token_budget"
            return None
        self.output_cap = self.planner.output_cap
        self.cap_reason = "token_budget" if self.output_cap is not None else None
        if self.settings.max_cost is not None and not self._fit_cost(request, forced):
            self.stop_reason = "cost_budget"
            return None
        request.send_images = self.settings.send_images and accepts_images(self.provider)
        if self.output is not None:
            request = self.output.prepare(request, self.provider, forced=forced is not None)
        return request

    async def send(
        self, request: ModelRequest, on_event: OnProviderEvent | None = None
    ) -> ModelReply:
        """Send ``request`` to the model; ``on_event`` sees each provider event.

        The reply's usage is priced and counted; with an output type, an answer given
        through the output tool becomes the reply's text.
        """
        if self._output_retry is not None:  # the rejected answer is lent to this request
            self.message.content = self._output_retry[0]
        self._in_flight = streamed = StreamedBytes(request)  # finish() counts a cut
        try:
            reply = await send_request(
                self.provider,
                request,
                on_event,
                seen_ids=self._seen_ids,
                max_output=self.output_cap,
                streamed=streamed,
            )
        finally:
            if self._output_retry is not None:
                self.message.content = ""
        self._in_flight = None
        if reply.truncated or not reply.usage.total_tokens:
            self._estimate_usage(request, reply)
        if reply.usage.total_tokens:  # dollars from genai-prices
            from ..cost import price

            reply.usage.cost = price(self.provider, reply.usage)
        self.planner.learn(request, reply.usage)
        self.usage = self.usage + reply.usage
        self.message.usage = self.usage
        if self.output is not None:
            reply.calls, answer = self.output.take_answer(reply.calls)
            reply.text = reply.text if answer is None else answer
        return reply

    def send_sync(
        self, request: ModelRequest, on_event: OnProviderEvent | None = None
    ) -> ModelReply:
        """:meth:`send` for synchronous code (safe inside Jupyter's running loop)."""
        from .._internal.threads import run_in_background

        reply: ModelReply = run_in_background(lambda: self.send(request, on_event))
        return reply

    # -- tools ---------------------------------------------------------------------------

    async def execute(
        self,
        reply: ModelReply,
        on_progress: ProgressCallback | None = None,
        *,
        on_result: Callable[[ToolResult], None] | None = None,
    ) -> list[ToolResult]:
        """Run the reply's calls with the tools, approval, timeouts and middleware."""
        return await execute_calls(
            reply.calls,
            self.tools,
            self.settings,
            inputs=self.inputs,
            on_result=on_result,
            on_progress=on_progress,
        )

    def execute_sync(
        self, reply: ModelReply, on_progress: ProgressCallback | None = None
    ) -> list[ToolResult]:
        """:meth:`execute` for synchronous code."""
        from .._internal.threads import run_in_background

        results: list[ToolResult] = run_in_background(lambda: self.execute(reply, on_progress))
        return results

    def begin_round(self, reply: ModelReply) -> ToolRound:
        """The reply's round, joined to the conversation before its calls run."""
        tool_round = ToolRound(
            reply.text or None, reply.calls, [], reply.usage, 0.0, reply.provider_data
        )
        self.rounds.append(tool_round)
        self.pending_round = tool_round
        return tool_round

    def end_round(self, tool_round: ToolRound, results: list[ToolResult]) -> None:
        """Give the round one result per call, in call order, and save it (history, trace)."""
        by_id = {r.call_id: r for r in results}
        for call in tool_round.calls:  # the history needs a result for every call
            if call.id not in by_id:
                by_id[call.id] = ToolResult(call.id, call.name, False, "Error: not run", "not run")
        tool_round.results = [by_id[c.id] for c in tool_round.calls]
        self.pending_round = None
        self.emit(RoundFinished(tool_round, self.rounds.index(tool_round)))

    def append_round(self, reply: ModelReply, results: list[ToolResult]) -> ToolRound:
        """Add the round (the reply's calls and their results) to the conversation."""
        tool_round = self.begin_round(reply)
        self.end_round(tool_round, results)
        return tool_round

    # -- the answer ----------------------------------------------------------------------

    def check_output(self, text: str) -> Verdict:
        """Validate a final answer: "complete" (value kept), "retry" or "output_invalid".

        "retry" means the next request carries the rejected answer and what is wrong
        with it (at most ``nbagent.run.output.RETRIES`` times).
        """
        if self.output is None:
            return "complete"
        from .output import RETRIES

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
        return "retry"

    def finish(
        self,
        reply: ModelReply | None = None,
        stop_reason: StopReason | None = None,
        *,
        partial: str = "",
        error: BaseException | None = None,
    ) -> RunResult:
        """End the run (idempotent) and return its RunResult.

        Args:
            reply: the final reply; its text is the answer (validated with an output type).
            stop_reason: why the run ends (default: ``self.stop_reason``, else "complete").
            partial: text streamed before the run stopped, kept ahead of the stop note.
            error: the exception that ended the run, named in its note.
        """
        if self.result is not None:
            return self.result
        self._estimate_cut_stream()
        if reply is not None:
            self.message.content = reply.text
            self.message.provider_data = reply.provider_data
            if self.output is not None and self._output_value is None and stop_reason is None:
                verdict = self.check_output(reply.text)
                stop_reason = "output_invalid" if verdict != "complete" else None
        stop = stop_reason or self.stop_reason or "complete"
        self.stop_reason = stop
        self._complete_pending_round(stop)
        note = STOPS[stop].note
        if note is not None and not self.message.content:
            if error is not None:
                note = f"[run failed: {type(error).__name__}: {error}]"
            self.message.content = (partial + "\n\n" if partial else "") + note
        self.message.stop_reason = stop
        self.message.usage = self.usage
        typed = self.output is not None
        self.result = RunResult(
            output=self._output_value if typed else self.message.content,
            text=self.message.content,
            output_type=self.settings.output_type,
            rounds=self.rounds,
            stop_reason=stop,
            usage=self.usage,
            model=self.model,
            conversation_id=self.conversation.id,
            elapsed_s=time.perf_counter() - self._started,
            message=self.message,
            notes=[n for n in (*self.notes, self.planner.context_note()) if n],
        )
        if stop != "complete":
            self.emit(Status(f"Stopped: {stop_reason_words(stop)}"))
        logger.info(
            "run finished: stop_reason=%s rounds=%d tokens=%d",
            stop,
            len(self.rounds),
            self.usage.total_tokens,
        )
        self.emit(RunFinished(self.result))
        for callback in self._on_finish:
            callback(self.result)
        return self.result

    def _complete_pending_round(self, stop_reason: StopReason) -> None:
        """Give every call without a result a synthetic error result (history invariant)."""
        tool_round = self.pending_round
        if tool_round is None:
            return
        by_id = {r.call_id: r for r in tool_round.results}
        word = "timed out" if stop_reason == "timeout" else "cancelled"
        error = f"not run: the run was {word}"
        tool_round.results = [
            by_id.get(call.id) or ToolResult(call.id, call.name, False, f"Error: {error}", error)
            for call in tool_round.calls
        ]
        self.pending_round = None

    def _fit_cost(self, request: ModelRequest, forced: StopReason | None) -> bool:
        """Cap ``request``'s output by what ``max_cost`` leaves (False: it does not fit)."""
        spent = self.usage.cost or 0.0
        afford, note = self.planner.cost_cap(request, spent, forced=forced is not None)
        if afford is None:
            # The answer unless a final request (the loop sends one when it fits) replaces it.
            self.message.content = note + ("\n" + self.gathered_summary() if self.rounds else "")
            return False
        cap = request.max_output_tokens
        request.max_output_tokens = afford if cap is None else min(cap, afford)
        if self.output_cap is None or afford < self.output_cap:
            self.output_cap, self.cap_reason = afford, "cost_budget"
        return True

    def _estimate_usage(self, request: ModelRequest, reply: ModelReply) -> None:
        """Usage estimated from the request and the reply's size, noted as an estimate.

        For a server that reported none, or a stream cut before its usage came.
        """
        reported = reply.usage
        output = math.ceil(reply.output_bytes / BYTES_PER_TOKEN)
        if reply.truncated and self.output_cap is not None:
            output = min(max(output, reported.output_tokens), self.output_cap)
        input_tokens = reported.input_tokens or self.planner.meter.estimate(request)
        reply.usage = Usage(input_tokens, output, estimated=True)
        if ESTIMATED_NOTE not in self.notes:
            self.notes.append(ESTIMATED_NOTE)

    def _estimate_cut_stream(self) -> None:
        """Count a request cut mid-stream (Stop, Ctrl-C, timeout): see ``run.streamed``."""
        cut, self._in_flight = self._in_flight, None
        if cut is not None and cut.count:
            self.usage = self.message.usage = self.usage + cut.estimate(self.planner.meter)
            self.notes += [] if CUT_STREAM_NOTE in self.notes else [CUT_STREAM_NOTE]

    def gathered_summary(self) -> str:
        """The forced final answer when the model gave no text: what the tools returned."""
        lines = [
            f"Stopped after {len(self.rounds)} tool rounds without a final answer. Tool results:"
        ]
        for rnd in self.rounds:
            for r in rnd.results:
                first_line = (r.content.splitlines() or [""])[0][:200]
                lines.append(f"- {r.name}: {first_line}")
        return "\n".join(lines)
