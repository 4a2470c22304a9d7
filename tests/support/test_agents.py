"""The test agent factory: what it builds is what a test would otherwise write by hand."""

from __future__ import annotations

import os
from pathlib import Path

from nbagent import tool
from nbagent.store import history_path
from nbagent.testing import call, reply
from tests.support.agents import TEST_KEY, http_agent, scripted_agent
from tests.support.history import query
from tests.support.servers import OpenAI, WireServer


@tool(register=False)
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def test_a_scripted_agent_runs_its_tools_and_keeps_what_the_model_saw():
    def script(request):
        if not request.tool_results:
            return reply(calls=[call("add", a=2, b=3)])
        return reply(f"The sum is {request.tool_results[-1].content}.")

    agent = scripted_agent(script, tools=[add], model="adder")
    result = agent.run_sync("What is 2 + 3?")
    assert result.output == "The sum is 5."
    requests = agent.provider.requests
    assert [r.tools for r in requests] == [["add"], ["add"]]
    assert requests[0].prompt == "What is 2 + 3?"
    assert agent.model == "scripted:adder"


def test_a_scripted_agent_takes_replies_in_order_and_agent_options():
    agent = scripted_agent(["first", "second"], system="Be brief.", max_rounds=2)
    assert agent.run_sync("one").output == "first"
    assert agent.run_sync("two").output == "second"
    assert agent.provider.requests[1].request.system == "Be brief."


def test_a_scripted_agents_history_is_the_tests_own(tmp_path_factory):
    path = history_path()
    assert path is not None
    assert Path(os.environ["NBAGENT_HOME"]).is_relative_to(tmp_path_factory.getbasetemp())
    scripted_agent().run_sync("hello")
    assert query(path, "SELECT role, content FROM messages ORDER BY rowid") == [
        ("user", "hello"),
        ("assistant", "You said: hello"),
    ]


def test_an_http_agent_reads_nothing_from_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://192.0.2.1/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-shell")
    openai = http_agent("openai:gpt-test", "http://127.0.0.1:8123", tools=[add])
    assert openai.provider.base_url == "http://127.0.0.1:8123/v1"
    assert list(openai.tools) == ["add"]
    anthropic = http_agent("anthropic:claude-test", "http://127.0.0.1:8123/")
    assert anthropic.provider.base_url == "http://127.0.0.1:8123"


def test_an_http_agent_runs_against_a_loopback_server_with_the_test_key():
    server = WireServer()
    try:
        server.add(OpenAI.call_stream(("call_1", "add", '{"a": 2, "b": 3}')))
        server.add(OpenAI.text_stream("It is 5."))
        result = http_agent("openai:gpt-test", server, tools=[add]).run_sync("2 + 3?")
    finally:
        server.close()
    assert result.output == "It is 5."
    assert [r.path for r in server.requests] == ["/v1/chat/completions"] * 2
    assert {r.headers["authorization"] for r in server.requests} == {f"Bearer {TEST_KEY}"}
    assert server.bodies()[1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "5",
    }
