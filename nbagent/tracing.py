"""OpenTelemetry spans for runs, model requests and tool calls (extra ``otel``).

When OpenTelemetry is in use (``opentelemetry.trace`` imported, which configuring
a tracer provider does), every run emits one ``invoke_agent`` span, a ``chat``
span per model request and an ``execute_tool`` span per tool call, carrying the
GenAI semantic-convention attributes (``gen_ai.operation.name``,
``gen_ai.provider.name`` (the provider's declared ``Capabilities.tracing_name``),
``gen_ai.request.model``, ``gen_ai.usage.*``,
``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``error.type``). Prompts, answers,
tool arguments and results are recorded only with ``NBAGENT_OTEL_CONTENT=1``.

The spans are built from the run's events (the same stream panels and the history
writer read), so the loop knows nothing about tracing. When OpenTelemetry is not
in use nothing is imported and each event costs one ``if``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from .events import (
    Event,
    RoundFinished,
    RunFinished,
    RunStarted,
    ToolCallFinished,
    ToolCallStarted,
)
from .messages import Usage
from .providers import Provider, capabilities
from .results import STOPS

CONTENT_VARIABLE = "NBAGENT_OTEL_CONTENT"
"""Set to 1 to record prompts, answers, tool arguments and results on spans."""

ERROR_STOPS = {reason for reason, stop in STOPS.items() if stop.is_error}
"""Stop reasons that mark the run span as failed (``error.type`` = the stop reason)."""


def run_tracer(provider: Provider, env: Any = None) -> RunTracer | None:
    """A tracer for one run of ``provider``, or None when OpenTelemetry is not in use."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    content = (env if env is not None else os.environ).get(CONTENT_VARIABLE, "") == "1"
    return RunTracer(trace, provider, content=content)


class RunTracer:
    """Turns one run's events into spans."""

    def __init__(self, trace: Any, provider: Provider, *, content: bool) -> None:
        self.trace = trace
        self.tracer = trace.get_tracer("nbagent")
        self.provider = provider.name
        self.provider_name = capabilities(provider).tracing_name or provider.name
        self.model = provider.model
        self.content = content
        self.run_span: Any = None
        self.request_span: Any = None
        self.request_ended_ns: int | None = None
        self.tool_spans: dict[str, Any] = {}
        self.rounds_usage = Usage()

    def _common(self, operation: str) -> dict[str, Any]:
        return {
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": self.provider_name,
            "gen_ai.system": self.provider,
            "gen_ai.request.model": self.model,
        }

    def on_event(self, event: Event) -> None:
        """Start or end the spans this event marks."""
        if isinstance(event, RunStarted):
            attributes = self._common("invoke_agent")
            attributes["gen_ai.agent.name"] = "nbagent"
            attributes["gen_ai.conversation.id"] = event.conversation_id
            if self.content:
                attributes["gen_ai.input.messages"] = _messages("user", event.prompt)
            self.run_span = self.tracer.start_span("invoke_agent nbagent", attributes=attributes)
            self._start_request()
        elif isinstance(event, ToolCallStarted):
            if self.request_ended_ns is None:
                self.request_ended_ns = time.time_ns()  # the request ended when calls began
            call = event.call
            attributes = self._common("execute_tool")
            attributes.update(
                {
                    "gen_ai.tool.name": call.name,
                    "gen_ai.tool.call.id": call.id,
                    "gen_ai.tool.type": "function",
                }
            )
            if self.content:
                attributes["gen_ai.tool.call.arguments"] = json.dumps(
                    call.arguments, ensure_ascii=False, default=str
                )
            self.tool_spans[call.id] = self.tracer.start_span(
                f"execute_tool {call.name}", context=self._parent(), attributes=attributes
            )
        elif isinstance(event, ToolCallFinished):
            result = event.result
            span = self.tool_spans.pop(result.call_id, None)
            if span is not None:
                if self.content:
                    span.set_attribute("gen_ai.tool.call.result", result.content)
                if not result.ok:
                    self._fail(span, _error_type(result.error), result.error or "")
                span.end()
        elif isinstance(event, RoundFinished):
            usage = event.round.usage
            self.rounds_usage = self.rounds_usage + usage
            self._end_request(usage, finish="tool_calls")
            self._start_request()
        elif isinstance(event, RunFinished):
            self.finish(event.result)

    def finish(self, result: Any = None) -> None:
        """End every open span (a run that ended without RunFinished ends as cancelled)."""
        stop = getattr(result, "stop_reason", None) or "cancelled"
        for span in self.tool_spans.values():
            self._fail(span, "cancelled", "the run ended before the call did")
            span.end()
        self.tool_spans.clear()
        if self.request_span is not None:
            usage = _minus(result.usage, self.rounds_usage) if result is not None else Usage()
            self._end_request(usage, finish=stop, error=stop if stop in ERROR_STOPS else None)
        span, self.run_span = self.run_span, None
        if span is None:
            return
        if result is not None:
            _set_usage(span, result.usage)
            span.set_attribute("nbagent.stop_reason", stop)
            span.set_attribute("nbagent.rounds", len(result.rounds))
            if self.content and result.text:
                span.set_attribute("gen_ai.output.messages", _messages("assistant", result.text))
        if stop in ERROR_STOPS:
            self._fail(span, stop, f"run stopped: {stop}")
        span.end()

    # -- helpers ---------------------------------------------------------------------

    def _parent(self) -> Any:
        return self.trace.set_span_in_context(self.run_span) if self.run_span else None

    def _start_request(self) -> None:
        self.request_ended_ns = None
        self.request_span = self.tracer.start_span(
            f"chat {self.model}", context=self._parent(), attributes=self._common("chat")
        )

    def _end_request(self, usage: Usage, *, finish: str, error: str | None = None) -> None:
        span, self.request_span = self.request_span, None
        if span is None:
            return
        _set_usage(span, usage)
        span.set_attribute("gen_ai.response.finish_reasons", [finish])
        if error is not None:
            self._fail(span, error, f"run stopped: {error}")
        span.end(end_time=self.request_ended_ns)  # None: now
        self.request_ended_ns = None

    def _fail(self, span: Any, error_type: str, description: str) -> None:
        from opentelemetry.trace import Status, StatusCode

        span.set_attribute("error.type", error_type)
        span.set_status(Status(StatusCode.ERROR, description))


def _set_usage(span: Any, usage: Usage) -> None:
    span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
    if usage.cost is not None:
        span.set_attribute("nbagent.usage.cost_usd", usage.cost)


def _minus(total: Usage, part: Usage) -> Usage:
    usage = Usage(
        max(total.input_tokens - part.input_tokens, 0),
        max(total.output_tokens - part.output_tokens, 0),
    )
    if total.cost is not None and part.cost is not None:
        usage.cost = max(total.cost - part.cost, 0.0)
    return usage


def _error_type(error: str | None) -> str:
    """``ValueError`` from ``"ValueError: boom"``; ``tool_error`` when no class is named."""
    head = (error or "").split(":", 1)[0].strip()
    return head if head.isidentifier() else "tool_error"


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])
