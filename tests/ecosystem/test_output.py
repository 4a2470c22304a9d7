"""Typed output over loopback servers speaking each API's wire format: the native
structured-output fields in the request body, validation retries, recursion, and
a model that never produces a valid value."""

from __future__ import annotations

import dataclasses
import json

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from nbagent import ConfigError
from nbagent.testing import call, reply
from tests.support.agents import http_agent, scripted_agent
from tests.support.scripted import Answer, ScriptedReplies
from tests.support.servers import Anthropic, Gemini, Ollama, OpenAI, Reply, WireServer


class City(BaseModel):
    name: str
    population: int


class Node(BaseModel):
    """A recursive type."""

    label: str
    children: list[Node] = []


@dataclasses.dataclass
class Point:
    x: float
    y: float


class Row(TypedDict):
    key: str
    count: int


CITIES = [{"name": "Paris", "population": 2100000}, {"name": "Lyon", "population": 520000}]


@pytest.fixture
def server():
    server = WireServer()
    yield server
    server.close()


def test_openai_sends_response_format_json_schema(server):
    server.add(OpenAI.text_stream(json.dumps({"value": CITIES})))
    agent = http_agent("openai:gpt-test", server, tools=[], store=None)
    result = agent.run_sync("Two French cities", output_type=list[City])
    assert result.output == [City(**c) for c in CITIES]
    assert json.loads(result.text) == {"value": CITIES}
    body = server.bodies()[0]
    response_format = body["response_format"]
    assert response_format["type"] == "json_schema"
    schema = response_format["json_schema"]["schema"]
    assert response_format["json_schema"]["name"] == "list_City"
    # A list root is wrapped in an object, as json_schema requires.
    assert schema["required"] == ["value"] and schema["properties"]["value"]["type"] == "array"
    frame = result.to_frame()
    assert list(frame.columns) == ["name", "population"] and frame["population"].sum() == 2620000


def test_gemini_sends_response_schema_in_its_subset(server):
    server.add(Gemini.text_stream(json.dumps(CITIES[0])))
    agent = http_agent("gemini:gemini-test", server, tools=[], store=None)
    result = agent.run_sync("A French city", output_type=City)
    assert result.output == City(**CITIES[0])
    generation = server.bodies()[0]["generationConfig"]
    assert generation["responseMimeType"] == "application/json"
    schema = generation["responseSchema"]
    assert schema["type"] == "OBJECT"
    assert schema["properties"]["population"]["type"] == "INTEGER"


def test_gemini_with_tools_gets_the_schema_in_words(server):
    def lookup(q: str) -> str:
        """Look something up."""
        return "x"

    server.add(Gemini.text_stream(json.dumps(CITIES[0])))
    agent = http_agent("gemini:gemini-test", server, tools=[lookup], store=None)
    result = agent.run_sync("A French city", output_type=City)
    assert result.output == City(**CITIES[0])
    body = server.bodies()[0]
    assert "responseSchema" not in json.dumps(body.get("generationConfig", {}))
    assert '"population"' in body["systemInstruction"]["parts"][0]["text"]


def test_ollama_sends_format(server):
    server.add(Reply.ndjson([*Ollama.text_chunks('{"x": 1.5, "y": -2}'), Ollama.done()]))
    agent = http_agent("ollama:qwen3", server, tools=[], store=None)
    result = agent.run_sync("A point", output_type=Point)
    assert result.output == Point(1.5, -2.0)
    body = server.bodies()[0]
    assert body["format"]["required"] == ["x", "y"]
    assert body["format"]["properties"]["x"]["type"] == "number"


def test_anthropic_answers_through_a_final_answer_tool(server):
    server.add(Anthropic.stream("", [("toolu_1", "final_answer", '{"key": "a", "count": 3}')]))
    agent = http_agent("anthropic:claude-test", server, tools=[], store=None)
    result = agent.run_sync("A row", output_type=Row)
    assert result.output == {"key": "a", "count": 3}
    assert result.stop_reason == "complete" and result.rounds == []
    body = server.bodies()[0]
    (tool,) = body["tools"]
    assert tool["name"] == "final_answer"
    assert tool["input_schema"]["required"] == ["key", "count"]
    assert "final_answer" in json.dumps(body["system"])
    # The history keeps the answer as text (no dangling tool call).
    assert agent.conversation.messages[-1].content == '{"key": "a", "count": 3}'


def test_anthropic_forced_final_answer_must_use_the_tool(server):
    def lookup(q: str) -> str:
        """Look something up."""
        return "3"

    server.add(
        Anthropic.stream("", [("toolu_1", "lookup", '{"q": "a"}')]),
        Anthropic.stream("", [("toolu_2", "final_answer", '{"key": "a", "count": 3}')]),
    )
    agent = http_agent("anthropic:claude-test", server, tools=[lookup], max_rounds=1, store=None)
    result = agent.run_sync("A row", output_type=Row)
    assert result.output == {"key": "a", "count": 3}
    assert server.bodies()[1]["tool_choice"] == {"type": "tool", "name": "final_answer"}


def test_an_invalid_answer_goes_back_with_the_errors_then_validates():
    def script(body):
        feedback = [m for m in body["messages"] if m["role"] == "user"][1:]
        if not feedback:
            return Answer('{"name": "Paris", "population": "many"}')
        return Answer('{"name": "Paris", "population": 2100000}')

    server = WireServer(responder=ScriptedReplies(script))
    try:
        agent = http_agent("openai:gpt-test", server, tools=[], store=None)
        result = agent.run_sync("Paris", output_type=City)
        assert result.stop_reason == "complete"
        assert result.output.population == 2100000
        retry = server.bodies()[1]["messages"]
        assert retry[-2] == {
            "role": "assistant",
            "content": '{"name": "Paris", "population": "many"}',
        }
        assert retry[-1]["role"] == "user"
        assert "population: Input should be a valid integer" in retry[-1]["content"]
        # The history holds the accepted answer only.
        assert [m.role for m in agent.conversation.messages] == ["user", "assistant"]
        assert agent.conversation.messages[-1].content == result.text
    finally:
        server.close()


def test_a_model_that_never_produces_valid_output_stops_with_the_raw_text():
    agent = scripted_agent(lambda request: "not json at all", tools=[], store=None)
    result = agent.run_sync("Paris", output_type=City)
    assert result.stop_reason == "output_invalid"
    assert result.output is None and result.text == "not json at all"
    assert len(agent.provider.requests) == 3  # the first answer and 2 retries
    assert "not valid JSON" in agent.provider.requests[1].messages[-1].content
    assert agent.conversation.messages[-1].stop_reason == "output_invalid"


def test_a_recursive_schema_reaches_every_format(server):
    tree = {"label": "root", "children": [{"label": "leaf", "children": []}]}
    server.add(
        OpenAI.text_stream(json.dumps(tree)),
        Gemini.text_stream(json.dumps(tree)),
        Reply.ndjson([*Ollama.text_chunks(json.dumps(tree)), Ollama.done()]),
        Anthropic.stream("", [("toolu_1", "final_answer", json.dumps(tree))]),
    )
    for model in ("openai:gpt-test", "gemini:gemini-test", "ollama:qwen3", "anthropic:claude-t"):
        agent = http_agent(model, server, tools=[], store=None)
        result = agent.run_sync("A tree", output_type=Node)
        assert result.output.children[0].label == "leaf", model
    openai, gemini, ollama, anthropic = server.bodies()
    schema = openai["response_format"]["json_schema"]["schema"]
    # The root is the object itself (APIs want an object root); $defs keep the recursion.
    assert schema["type"] == "object"
    assert schema["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    # Gemini's subset has no $ref: the converter expands the recursion a bounded depth.
    assert "$ref" not in json.dumps(gemini["generationConfig"]["responseSchema"])
    assert ollama["format"]["properties"]["children"]
    # Anthropic: the final_answer tool's input schema keeps the $defs its $ref needs.
    (final,) = [t for t in anthropic["tools"] if t["name"] == "final_answer"]
    assert final["input_schema"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert final["input_schema"]["$defs"]["Node"]["properties"]["label"] == {
        "title": "Label",
        "type": "string",
    }


def test_tools_then_typed_answer_and_primitive_types():
    def script(request):
        if not request.tool_results:
            return reply(calls=[call("double", x=21)])
        return reply('```json\n{"value": 42}\n```')

    def double(x: int) -> int:
        """Twice x."""
        return 2 * x

    agent = scripted_agent(script, tools=[double], store=None, output_type=int)
    result = agent.run_sync("double 21")
    assert result.output == 42 and len(result.rounds) == 1
    # Providers without structured output are told the schema in the system prompt.
    assert '"value"' in agent.provider.requests[0].request.system


def test_an_output_type_without_a_schema_is_refused_before_any_request():
    agent = scripted_agent(["{}"], tools=[], store=None)
    with pytest.raises(ConfigError, match="output_type"):
        agent.run_sync("x", output_type=object())
    assert agent.provider.requests == []


def test_typed_output_renders_as_a_table():
    agent = scripted_agent([json.dumps({"value": CITIES})], tools=[], store=None)
    result = agent.run_sync("cities", output_type=list[City])
    html = result.mime_bundle()["text/html"]
    assert "<table" in html and "Lyon" in html
    assert '"population": 520000' in result.mime_bundle()["text/plain"]
