"""The loop's pieces, public: drive the rounds yourself.

The automatic loop (:class:`nbagent.run.loop.Run`) is built on these pieces; use them
directly to decide between rounds yourself (inspect the calls, skip some, stop
early, log)::

    steps = Steps(agent, "Weather in Oslo?")
    while True:
        request = steps.next_request()             # budgets and context window applied
        reply = await steps.send(request)           # the model's text and calls
        if not reply.requires_tool_execution:
            break
        results = await steps.execute(reply)        # the agent's tools, approval, middleware
        steps.append_round(reply, results)          # the round joins the conversation
    result = steps.finish(reply)                    # a RunResult, like agent.run's

* :class:`RequestPlanner`: the next :class:`~nbagent.providers.ModelRequest` from a
  conversation, fitted to the context window and the token budget;
* :func:`send_request`: one request, its events passed on, a :class:`ModelReply` back;
* :func:`execute_calls`: one round's calls with the tools, approval, timeouts,
  output budget, middleware, retries and progress;
* :class:`Steps`: the four together on an :class:`~nbagent.Agent`'s conversation.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..messages import Conversation, Message, ToolCall, ToolResult, ToolRound, Usage, new_id
from ..providers.base import Finished, ModelRequest, Provider, TextChunk, ToolCallReady, UsageReport
from ..results import RunResult
from ..tools import Tool, execute_round, wrap_call
from .budget import TokenMeter, context_window, fit_request

__all__ = [
    "FINAL_INSTRUCTIONS",
    "ModelReply",
    "RequestPlanner",
    "Steps",
    "execute_calls",
    "send_request",
]

logger = logging.getLogger("nbagent")

FINAL_ANSWER_INSTRUCTION = (
    "You have used the maximum number of tool rounds. Do not call any more tools. "
    "Answer the user's request now, as well as you can, from the information gathered so far."
)

FINAL_INSTRUCTIONS = {
    "max_rounds": FINAL_ANSWER_INSTRUCTION,
    "tool_errors": (
        "The tool calls keep failing. Do not call any more tools. Tell the user what "
        "failed and answer as well as you can from the information gathered so far."
    ),
    "token_budget": (
        "The token budget for this request is nearly spent. Do not call any more tools. "
        "Answer the user's request now, briefly, from the information gathered so far."
    ),
    "tool_only_rounds": FINAL_ANSWER_INSTRUCTION,
    "final": FINAL_ANSWER_INSTRUCTION,
}
"""The user text of a forced final request, by the reason it was forced."""

FINAL_OUTPUT_TOKENS = 64
"""The fewest output tokens worth a forced final request at the token budget."""

ProgressCallback = Callable[[ToolCall, str, "float | None"], None]


@dataclass
class ModelReply:
    """What one model request returned."""

    text: str
    calls: list[ToolCall]
    usage: Usage
    provider_data: dict[str, Any] | None = None

    @property
    def requires_tool_execution(self) -> bool:
        """True when the model asked for tool calls (run them, then send again)."""
        return bool(self.calls)


class RequestPlanner:
    """Builds each request of a run, fitted to the context window and the token budget.

    ``overflow`` is set when a request could not fit the context window even
    compacted (the run must stop: nothing is sent).
    """

    def __init__(self, settings: Any, provider: Provider) -> None:
        self.settings = settings
        self.meter = TokenMeter()
        self.window = settings.context_window or context_window(provider)
        self.last_estimate = 0
        self.overflow = False

    def build(
        self,
        conversation: Conversation,
        tools: list[Any],
        *,
        spent: int = 0,
        forced: str | None = None,
    ) -> ModelRequest | None:
        """The next request (None: it would pass the budget, or cannot fit the window).

        Args:
            conversation: the history, ending with the in-progress assistant message.
            tools: the tool specs to offer.
            spent: tokens the run used so far (for ``max_total_tokens``).
            forced: why this is the forced final request (tools forbidden), or None.
        """
        settings = self.settings
        request = ModelRequest(
            system=conversation.system,
            messages=conversation.messages,
            tools=tools,
            tool_choice="none" if forced else "auto",
            final_instruction=FINAL_INSTRUCTIONS[forced] if forced else None,
            stream=settings.stream,
            max_output_tokens=settings.max_output_tokens,
            temperature=settings.temperature,
            text_tool_calls=settings.text_tool_calls,
        )
        budget = settings.max_total_tokens
        limit = None
        if self.window is not None:
            # Room for the answer: what max_output_tokens asks, or an eighth of the window.
            limit = self.window - (settings.max_output_tokens or self.window // 8)
        if budget is not None and forced:
            # The forced final request may use all that is left but a short answer's room.
            left = budget - spent - FINAL_OUTPUT_TOKENS
            limit = left if limit is None else min(limit, left)
        if limit is None and budget is None:
            return request  # nothing to fit (and no window to report fullness against)
        fitted = fit_request(request, limit if limit is not None else 1 << 62, self.meter)
        if fitted is None:
            self.overflow = budget is None
            logger.info("no request fits in %d tokens", limit)
            return None
        request, estimate = fitted
        if budget is not None:
            left = budget - spent
            if not forced and 2 * (estimate + FINAL_OUTPUT_TOKENS) > left:
                return None  # another round would leave no room for the final answer
            # Never exceed the budget: the output may use only what the input leaves.
            room = left - estimate
            cap = settings.max_output_tokens
            request.max_output_tokens = room if cap is None else min(cap, room)
        self.last_estimate = estimate
        if request.messages is not conversation.messages:
            logger.info("request compacted to fit: about %d input tokens", estimate)
        return request

    def learn(self, request: ModelRequest, usage: Usage) -> None:
        """Scale later estimates by the provider's count of this request."""
        if self.window is not None or self.settings.max_total_tokens is not None:
            self.meter.calibrate(request, usage.input_tokens)

    def context_note(self) -> str | None:
        """``context 2,100/128,000 tokens (2%)`` for the footer (None if the window is unknown)."""
        if self.window is None or not self.last_estimate:
            return None
        share = 100 * self.last_estimate / self.window
        return f"context {self.last_estimate:,}/{self.window:,} tokens ({share:.0f}%)"


async def send_request(
    provider: Provider,
    request: ModelRequest,
    on_event: Callable[[Any], None] | None = None,
    *,
    seen_ids: set[str] | None = None,
) -> ModelReply:
    """Send ``request``; each provider event goes to ``on_event`` as it arrives.

    Calls without an id, or with one already used in this run (``seen_ids``), get a
    fresh id: results are matched to calls by id.
    """
    seen = seen_ids if seen_ids is not None else set()
    text: list[str] = []
    calls: list[ToolCall] = []
    usage = Usage()
    provider_data: dict[str, Any] | None = None
    stream = provider.stream(request)
    try:
        async for event in stream:
            if isinstance(event, TextChunk):
                text.append(event.text)
            elif isinstance(event, ToolCallReady):
                call = event.call
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
    return ModelReply("".join(text), calls, usage, provider_data)


async def execute_calls(
    calls: list[ToolCall],
    tools: Mapping[str, Tool],
    settings: Any,
    *,
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
        per_call_chars=settings.per_call_chars,
        per_round_chars=settings.per_round_chars,
        on_result=on_result,
        wrap=wrap,
    )


@dataclass
class Steps:
    """One run of an :class:`~nbagent.Agent`, driven a step at a time by the caller.

    Creating it appends the prompt (and an in-progress assistant message) to the
    agent's conversation; every method keeps the history valid. See the module
    docstring for the loop; :meth:`finish` ends it and returns a RunResult.
    """

    agent: Any
    prompt: str
    planner: RequestPlanner = field(init=False)
    message: Message = field(init=False)
    usage: Usage = field(default_factory=Usage, init=False)
    _seen_ids: set[str] = field(default_factory=set, init=False)
    _started: float = field(default_factory=time.perf_counter, init=False)

    def __post_init__(self) -> None:
        settings = self.agent.settings
        self.planner = RequestPlanner(settings, self.agent.provider)
        self.message = Message(role="assistant", content="", rounds=[], model=self.agent.model)
        self.agent.conversation.messages.append(Message(role="user", content=self.prompt))
        self.agent.conversation.messages.append(self.message)

    @property
    def rounds(self) -> list[ToolRound]:
        """The rounds appended so far."""
        if self.message.rounds is None:
            self.message.rounds = []
        return self.message.rounds

    def next_request(self, *, final: bool = False) -> ModelRequest | None:
        """The next request, or None when it would pass the budget or the context window.

        ``final=True`` forbids tools and asks for the answer (as at ``max_rounds``).
        """
        tools = [t.spec for t in self.agent.tools.values()]
        forced = "final" if final else None
        spent = self.usage.total_tokens
        return self.planner.build(self.agent.conversation, tools, spent=spent, forced=forced)

    async def send(
        self, request: ModelRequest, on_event: Callable[[Any], None] | None = None
    ) -> ModelReply:
        """Send ``request`` to the agent's model; ``on_event`` sees each provider event."""
        reply = await send_request(self.agent.provider, request, on_event, seen_ids=self._seen_ids)
        self.planner.learn(request, reply.usage)
        self.usage = self.usage + reply.usage
        return reply

    async def execute(
        self, reply: ModelReply, on_progress: ProgressCallback | None = None
    ) -> list[ToolResult]:
        """Run the reply's calls with the agent's tools, approval, timeouts and middleware."""
        return await execute_calls(
            reply.calls, self.agent.tools, self.agent.settings, on_progress=on_progress
        )

    def append_round(self, reply: ModelReply, results: list[ToolResult]) -> ToolRound:
        """Add the round (the reply's calls and their results) to the conversation."""
        by_id = {r.call_id: r for r in results}
        missing = [c for c in reply.calls if c.id not in by_id]
        for call in missing:  # the history needs a result for every call
            by_id[call.id] = ToolResult(call.id, call.name, False, "Error: not run", "not run")
        ordered = [by_id[c.id] for c in reply.calls]
        tool_round = ToolRound(
            reply.text or None, reply.calls, ordered, reply.usage, 0.0, reply.provider_data
        )
        self.rounds.append(tool_round)
        return tool_round

    def finish(self, reply: ModelReply | None = None, stop_reason: str = "complete") -> RunResult:
        """End the run with ``reply``'s text as the answer; returns the RunResult."""
        if reply is not None:
            self.message.content = reply.text
            self.message.provider_data = reply.provider_data
        self.message.stop_reason = stop_reason
        self.message.usage = self.usage
        note = self.planner.context_note()
        result = RunResult(
            output=self.message.content,
            rounds=self.rounds,
            stop_reason=stop_reason,
            usage=self.usage,
            model=self.agent.model,
            conversation_id=self.agent.conversation.id,
            elapsed_s=time.perf_counter() - self._started,
            message=self.message,
            notes=[note] if note else [],
        )
        self.agent.last_result = result
        return result
