"""A provider added from outside the package: one module, one ``register`` line.

"MadeUp" is an invented JSON API (nothing like it exists): ``POST /v2/turn`` with
``turns`` and ``abilities``; the reply streams NDJSON lines ``{"say": text}``,
``{"use": {"ref", "ability", "inputs"}}`` and a last ``{"end": {"why", "tokens"}}``,
or comes whole as ``{"said", "uses", "why", "tokens"}``. The key goes in
``x-madeup-key``. The adapter below is all it takes; the test drives it through
``Agent("madeup:model-x")`` against a loopback server speaking that format.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from nbagent import Agent
from nbagent.messages import ToolCall, Usage
from nbagent.providers import (
    Finished,
    ModelRequest,
    ProviderEvent,
    TextChunk,
    ToolCallReady,
    UsageReport,
    register,
)
from nbagent.providers.http import HttpProvider, NDJSONDecoder
from tests.support.servers import RecordedRequest, Reply, WireServer

# --------------------------------------------------------------------------- the adapter


class MadeUpDecoder(NDJSONDecoder):
    """NDJSON lines (or one whole reply) of the MadeUp API -> provider events."""

    provider = "madeup"

    def __init__(self, *, stream: bool = True) -> None:
        super().__init__(stream=stream)
        self.calls: list[ToolCall] = []
        self.ended: dict[str, Any] | None = None

    def decode(self, items: list[Any]) -> list[ProviderEvent]:
        events: list[ProviderEvent] = []
        for item in items:
            if "say" in item:
                events.append(TextChunk(item["say"]))
            elif "use" in item:
                use = item["use"]
                self.calls.append(ToolCall(use["ref"], use["ability"], use["inputs"]))
            elif "end" in item:
                self.ended = item["end"]
        return events

    def end(self) -> list[ProviderEvent]:
        if self.ended is None:
            raise self.fail("incomplete_stream", "the stream ended before its end line")
        return [
            *(ToolCallReady(call) for call in self.calls),
            UsageReport(Usage(*self.ended["tokens"])),
            Finished(self.ended["why"]),
        ]

    def reply(self, payload: Any) -> list[ProviderEvent]:
        lines = [{"say": payload["said"]}] if payload.get("said") else []
        lines += [{"use": use} for use in payload.get("uses", [])]
        lines.append({"end": {"why": payload["why"], "tokens": payload["tokens"]}})
        return self.decode(lines) + self.end()


class MadeUpProvider(HttpProvider):
    """The MadeUp API: ``madeup:MODEL``, key in ``MADEUP_API_KEY``."""

    name = "madeup"
    key_variables = ("MADEUP_API_KEY",)
    base_url_variable = "MADEUP_BASE_URL"
    default_base_url = "https://api.madeup.invalid"
    key_header, key_prefix = "x-madeup-key", ""
    secret_headers = ("x-madeup-key",)
    path = "/v2/turn"

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        turns: list[dict[str, Any]] = []
        for message in request.messages:
            if message.role != "assistant":
                turns.append({"speaker": "user", "text": message.content})
                continue
            for tool_round in message.rounds or []:
                for call, result in zip(tool_round.calls, tool_round.results, strict=True):
                    turns.append({"speaker": "bot", "uses": call.name, "ref": call.id,
                                  "inputs": call.arguments})  # fmt: skip
                    turns.append({"speaker": "tool", "ref": call.id, "text": result.content})
            if message.content:
                turns.append({"speaker": "bot", "text": message.content})
        if request.final_instruction:
            turns.append({"speaker": "user", "text": request.final_instruction})
        body: dict[str, Any] = {"model": self.model, "turns": turns, "stream": request.stream}
        if request.system:
            body["brief"] = request.system
        if request.tool_choice != "none":
            body["abilities"] = [
                {"id": t.name, "about": t.description, "inputs": t.parameters}
                for t in request.tools
            ]
        return {**body, **self.extra_body, **request.extra}

    def decoder(self, request: ModelRequest) -> MadeUpDecoder:
        return MadeUpDecoder(stream=request.stream)


register("madeup", MadeUpProvider)

# --------------------------------------------------------------------------- the server


def madeup_server(request: RecordedRequest) -> Reply:
    """A MadeUp model: uses the one ability it is offered once, then says its result."""
    body = request.json()
    last = body["turns"][-1]
    if last["speaker"] == "user" and body.get("abilities"):
        ability = body["abilities"][0]["id"]
        lines: list[dict[str, Any]] = [
            {"say": "Let me "},
            {"say": "check."},
            {"use": {"ref": "r1", "ability": ability, "inputs": {"a": 2, "b": 3}}},
            {"end": {"why": "use", "tokens": [30, 9]}},
        ]
    else:
        lines = [{"say": f"It is {last['text']}."}, {"end": {"why": "done", "tokens": [55, 4]}}]
    if not body["stream"]:
        said = "".join(line.get("say", "") for line in lines)
        uses = [line["use"] for line in lines if "use" in line]
        end = lines[-1]["end"]
        return Reply(200, {"said": said, "uses": uses, "why": end["why"], "tokens": end["tokens"]})
    return Reply.ndjson(lines)


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("stream", [True, False])
async def test_a_provider_registered_from_outside_runs_a_tool_round(stream: bool) -> None:
    server = WireServer(responder=madeup_server)
    try:
        env = {"MADEUP_API_KEY": "madeup-key-0123456789", "MADEUP_BASE_URL": server.url}
        agent = Agent("madeup:model-x", tools=[add], env=env, stream=stream, system="Be brief.")
        result = await agent.run("What is 2 + 3?")
    finally:
        server.close()

    # What the user gets.
    assert result.output == "It is 5."
    assert [(c.id, c.name, c.arguments) for c in result.rounds[0].calls] == [
        ("r1", "add", {"a": 2, "b": 3})
    ]
    assert result.rounds[0].assistant_text == "Let me check."
    assert result.usage == Usage(85, 13)
    assert result.stop_reason == "complete"

    # What the server received: the key in its header, the history in MadeUp's shape.
    first, second = server.requests
    assert first.path == second.path == "/v2/turn"
    assert first.headers["x-madeup-key"] == "madeup-key-0123456789"
    assert first.json() == {
        "model": "model-x",
        "brief": "Be brief.",
        "turns": [{"speaker": "user", "text": "What is 2 + 3?"}],
        "stream": stream,
        "abilities": [{"id": "add", "about": "Add two numbers.", "inputs": ADD_SCHEMA}],
    }
    assert second.json()["turns"] == [
        {"speaker": "user", "text": "What is 2 + 3?"},
        {"speaker": "bot", "uses": "add", "ref": "r1", "inputs": {"a": 2, "b": 3}},
        {"speaker": "tool", "ref": "r1", "text": "5"},
    ]


def test_the_registry_knows_what_the_outside_provider_declares() -> None:
    from nbagent import providers

    assert "madeup" in providers.registered()
    assert providers.makes_http_requests("madeup:model-x")
    assert "x-madeup-key" in providers.secret_headers()  # recordings redact it
    assert "MADEUP_API_KEY" in providers.key_variables()
    assert "MADEUP_BASE_URL" in providers.environment_variables()


def test_decoder_on_a_recorded_body_without_a_server() -> None:
    body = b"".join(
        json.dumps(line).encode() + b"\n"
        for line in ({"say": "Hi "}, {"say": "there"}, {"end": {"why": "done", "tokens": [3, 2]}})
    )
    decoder = MadeUpDecoder()
    events = [event for i in range(len(body)) for event in decoder.feed(body[i : i + 1])]
    events += decoder.close()
    assert events == [
        TextChunk("Hi "),
        TextChunk("there"),
        UsageReport(Usage(3, 2)),
        Finished("done"),
    ]
