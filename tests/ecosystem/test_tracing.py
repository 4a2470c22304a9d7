"""OpenTelemetry: one span per run, model request and tool call, read back from the SDK's
in-memory exporter; content only on opt-in; nothing imported without OpenTelemetry."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from nbagent import Agent
from nbagent.providers import Capabilities
from nbagent.testing import ScriptedModel, call, reply
from tests.support.agents import http_agent, scripted_agent
from tests.support.scripted import Answer, ScriptedReplies
from tests.support.servers import WireServer

EXPORTER = InMemorySpanExporter()


@pytest.fixture(autouse=True)
def exporter():
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
        trace.set_tracer_provider(provider)
    EXPORTER.clear()
    yield EXPORTER
    EXPORTER.clear()


def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def broken(x: int) -> int:
    """Always fails."""
    raise ValueError("no luck")


def spans_by_operation(exporter):
    spans = exporter.get_finished_spans()
    out: dict[str, list] = {}
    for span in spans:
        out.setdefault(span.attributes["gen_ai.operation.name"], []).append(span)
    return out


def test_a_run_emits_run_request_and_tool_spans_with_genai_attributes(exporter):
    def script(body):
        if body["messages"][-1]["role"] == "user":
            return Answer("", [("lookup", {"city": "Paris"}), ("broken", {"x": 1})])
        return Answer("It is sunny.")

    server = WireServer(responder=ScriptedReplies(script))
    try:
        agent = http_agent("openai:gpt-4o-mini", server, tools=[lookup, broken], store=None)
        result = agent.run_sync("Weather in Paris?")
    finally:
        server.close()
    ops = spans_by_operation(exporter)
    (run,) = ops["invoke_agent"]
    chats = sorted(ops["chat"], key=lambda s: s.start_time)
    tools = {s.attributes["gen_ai.tool.name"]: s for s in ops["execute_tool"]}
    assert len(chats) == 2 and set(tools) == {"lookup", "broken"}
    assert run.attributes["gen_ai.provider.name"] == "openai"
    assert run.attributes["gen_ai.request.model"] == "gpt-4o-mini"
    assert run.attributes["gen_ai.usage.input_tokens"] == result.usage.input_tokens
    assert run.attributes["gen_ai.usage.output_tokens"] == result.usage.output_tokens
    assert run.attributes["gen_ai.conversation.id"] == agent.conversation.id
    # ScriptedReplies: 20 input tokens per message sent.
    assert [c.attributes["gen_ai.usage.input_tokens"] for c in chats] == [
        20,
        80,
    ]  # user; then user, assistant, 2 tool results
    assert chats[0].attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert chats[0].name == "chat gpt-4o-mini"
    calls = {c.name: c.id for c in result.rounds[0].calls}
    assert tools["lookup"].attributes["gen_ai.tool.call.id"] == calls["lookup"]
    assert tools["lookup"].status.is_ok
    assert tools["broken"].attributes["error.type"] == "ValueError"
    assert not tools["broken"].status.is_ok
    for child in [*chats, *tools.values()]:
        assert child.parent.span_id == run.context.span_id
        assert child.context.trace_id == run.context.trace_id
    # The first request ended before its calls began; the calls before the second request.
    assert chats[0].end_time <= min(t.start_time for t in tools.values())
    assert max(t.end_time for t in tools.values()) <= chats[1].start_time
    # No content without the opt-in.
    for span in exporter.get_finished_spans():
        assert "Paris" not in json.dumps(dict(span.attributes))


def test_spans_name_the_provider_as_it_declares(exporter):
    declared = Capabilities(tracing_name="capable.ai")
    model = ScriptedModel(["Hi."], model="m1", capabilities=declared)
    Agent(model, tools=[], store=None).run_sync("Hello")
    ops = spans_by_operation(exporter)
    (run,) = ops["invoke_agent"]
    assert run.attributes["gen_ai.provider.name"] == "capable.ai"
    assert run.attributes["gen_ai.system"] == "scripted"  # nbagent's own name for it
    assert {s.attributes["gen_ai.provider.name"] for s in ops["chat"]} == {"capable.ai"}


def test_content_is_recorded_only_with_the_opt_in(exporter):
    def script(request):
        if not request.tool_results:
            return reply(calls=[call("lookup", city="Oslo")])
        return reply("Sunny in Oslo.")

    agent = scripted_agent(script, tools=[lookup], store=None, env={"NBAGENT_OTEL_CONTENT": "1"})
    agent.run_sync("Weather in Oslo?")
    ops = spans_by_operation(exporter)
    (run,) = ops["invoke_agent"]
    (tool,) = ops["execute_tool"]
    assert "Weather in Oslo?" in run.attributes["gen_ai.input.messages"]
    assert "Sunny in Oslo." in run.attributes["gen_ai.output.messages"]
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"city": "Oslo"}
    assert tool.attributes["gen_ai.tool.call.result"] == "sunny in Oslo"


def test_a_failed_run_marks_the_run_span(exporter):
    agent = scripted_agent(
        lambda request: reply(calls=[call("broken", x=1)]),
        tools=[broken],
        store=None,
        max_consecutive_errors=1,
    )
    result = agent.run_sync("go")
    assert result.stop_reason == "tool_errors"
    (run,) = spans_by_operation(exporter)["invoke_agent"]
    assert run.attributes["error.type"] == "tool_errors"
    assert run.attributes["nbagent.stop_reason"] == "tool_errors"
    assert all(s.end_time for s in exporter.get_finished_spans())


def test_without_opentelemetry_in_use_nothing_is_imported():
    code = (
        "import sys, json\n"
        "from nbagent.testing import ScriptedModel\n"
        "from nbagent import Agent\n"
        "Agent(ScriptedModel(['hi']), store=None, tools=[]).run_sync('x')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('opentelemetry', "
        "'mcp', 'genai_prices')))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    loaded = json.loads(out)
    assert not [m for m in loaded if m.startswith(("opentelemetry", "mcp"))], loaded
