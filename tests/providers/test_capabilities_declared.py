"""A new provider declares what its models can do, and nbagent asks it, nothing else.

"Capable" is the MadeUp API of ``test_register_outside.py`` (an invented NDJSON
format) with its capabilities declared: typed answers in its own ``shape`` field,
a small context window for ``-tiny`` models, images only for ``-vision`` models,
prices under OpenAI's ids and its own tracing name. Nothing outside this file
knows about it: typed output, cost, the context window and the image decision
all come from its declaration, seen in the bodies a loopback server receives.
"""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

import pytest
from genai_prices import Usage as PriceUsage
from genai_prices import calc_price
from PIL import Image as PILImage
from pydantic import BaseModel

from nbagent import Agent, ConfigError
from nbagent._internal.images import placeholders, to_image
from nbagent.messages import Message
from nbagent.providers import (
    Capabilities,
    ModelRequest,
    capabilities,
    get_provider,
    register,
    unregister,
)
from nbagent.run.output import OutputSpec
from nbagent.testing import ScriptedModel
from tests.providers.test_register_outside import MadeUpProvider
from tests.support.servers import RecordedRequest, Reply, WireServer

# --------------------------------------------------------------------------- the adapter


class CapableProvider(MadeUpProvider):
    """MadeUp, with what its models can do declared."""

    name = "capable"
    key_variables = ("CAPABLE_API_KEY",)
    base_url_variable = "CAPABLE_BASE_URL"
    output_mode = "native"  # typed answers: the schema in the body's "shape"
    pricing_id = "openai"  # it serves OpenAI's models at OpenAI's prices
    tracing_name = "capable.ai"

    def capabilities(self) -> Capabilities:
        declared = super().capabilities()  # the class attributes and the model's family
        window = 400 if self.model.endswith("-tiny") else declared.context_window
        vision = self.model.endswith("-vision")
        return dataclasses.replace(declared, context_window=window, images=vision)

    def native_output(
        self, extra: dict[str, Any], schema: dict[str, Any], name: str
    ) -> dict[str, Any]:
        return {**extra, "shape": {"title": name, "schema": schema}}

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        body = super().build_body(request)
        results = {
            result.call_id: result
            for message in request.messages
            for tool_round in message.rounds or []
            for result in tool_round.results
        }
        for turn in body["turns"]:
            result = results.get(turn.get("ref", "")) if turn["speaker"] == "tool" else None
            if result is None or not result.images:
                continue
            if request.send_images:
                turn["pictures"] = [image.base64() for image in result.images]
            else:
                turn["text"] = "\n".join([turn["text"], *placeholders(result.images)])
        return body


@pytest.fixture(autouse=True)
def registered_capable() -> Any:
    """The one line a new provider needs (undone after each test: the registry is global)."""
    register("capable", CapableProvider)
    try:
        yield
    finally:
        unregister("capable")


# --------------------------------------------------------------------------- the server

TOKENS = [1200, 80]


def capable_server(request: RecordedRequest) -> Reply:
    """Answers in the declared shape, uses the one ability once, then says it is done."""
    body = request.json()
    last = body["turns"][-1]
    if "shape" in body:
        lines: list[dict[str, Any]] = [{"say": '{"name": "Paris", "population": 2100000}'}]
    elif last["speaker"] == "user" and body.get("abilities"):
        ability = body["abilities"][0]["id"]
        lines = [{"use": {"ref": "r1", "ability": ability, "inputs": {}}}]
    else:
        lines = [{"say": "Done."}]
    lines.append({"end": {"why": "done", "tokens": TOKENS}})
    return Reply.ndjson(lines)


@pytest.fixture
def server() -> Any:
    server = WireServer(responder=capable_server)
    try:
        yield server
    finally:
        server.close()


def capable_agent(model: str, server: WireServer, **options: Any) -> Agent:
    env = {"CAPABLE_API_KEY": "capable-key-0123456789", "CAPABLE_BASE_URL": server.url}
    return Agent(f"capable:{model}", env=env, store=None, **options)


class City(BaseModel):
    name: str
    population: int


def chart() -> Any:
    """Draw the chart."""
    return PILImage.new("RGB", (64, 48), (200, 30, 30))


# --------------------------------------------------------------------------- the tests


def test_typed_output_goes_where_the_provider_declares(server: WireServer) -> None:
    result = capable_agent("gpt-4o-mini", server, tools=[]).run_sync("Paris?", output_type=City)
    assert result.output == City(name="Paris", population=2100000)
    (sent,) = server.requests
    body = sent.json()
    assert body["shape"] == {"title": "City", "schema": OutputSpec(City).schema}
    assert "brief" not in body  # native output: no schema in words in the system prompt


def test_the_price_comes_from_the_declared_pricing_id(server: WireServer) -> None:
    result = capable_agent("gpt-4o-mini", server, tools=[]).run_sync("Hello")
    listed = calc_price(
        PriceUsage(input_tokens=TOKENS[0], output_tokens=TOKENS[1]),
        "gpt-4o-mini",
        provider_id="openai",
    )
    assert result.usage.cost == pytest.approx(float(listed.total_price))
    # max_cost is enforceable for a priced model, and refused for an unpriced one.
    capped = capable_agent("gpt-4o-mini", server, tools=[], max_cost=1.0).run_sync("Hi")
    assert capped.stop_reason == "complete"
    with pytest.raises(ConfigError, match="no price"):
        Agent(ScriptedModel(["Hi"]), tools=[], store=None, max_cost=1.0).run_sync("Hi")


def test_the_context_window_is_the_declared_one_per_model(server: WireServer) -> None:
    prompt = "Summarise this. " + "word " * 600  # ~1,000 tokens: over 400, far under 128k
    tiny = capable_agent("gpt-4o-mini-tiny", server, tools=[]).run_sync(prompt)
    assert tiny.stop_reason == "context_window"
    assert server.requests == []  # a request that cannot fit is never sent
    full = capable_agent("gpt-4o-mini", server, tools=[]).run_sync(prompt)
    assert full.stop_reason == "complete" and len(server.requests) == 1


def test_images_go_only_to_the_models_it_declares_take_them(server: WireServer) -> None:
    png = base64.b64encode(to_image(chart()).data).decode()
    capable_agent("gpt-4o-mini-vision", server, tools=[chart]).run_sync("Draw it.")
    (tool_turn,) = [t for t in server.requests[-1].json()["turns"] if t["speaker"] == "tool"]
    assert tool_turn["pictures"] == [png]

    # gpt-4o-mini takes images elsewhere; this provider says its build does not.
    capable_agent("gpt-4o-mini", server, tools=[chart]).run_sync("Draw it.")
    (tool_turn,) = [t for t in server.requests[-1].json()["turns"] if t["speaker"] == "tool"]
    assert "pictures" not in tool_turn
    assert tool_turn["text"].endswith("[image 64×48 PNG shown to the user]")


def test_what_the_registry_reads_of_the_declaration() -> None:
    env = {"CAPABLE_API_KEY": "capable-key-0123456789"}
    declared = capabilities(get_provider("capable:gpt-4o-mini-tiny", env=env))
    assert declared == Capabilities(
        output_mode="native",
        context_window=400,
        images=False,
        pricing_id="openai",
        tracing_name="capable.ai",
    )


def test_a_provider_that_declares_nothing_gets_its_model_familys_facts() -> None:
    class Bare:  # a user's own provider: name, model and stream only
        name = "bare"
        model = "llama3.2:3b"

    assert capabilities(Bare()) == Capabilities(
        output_mode="prompt", context_window=131_072, images=False, pricing_id=None
    )


def test_a_declared_mode_without_its_wire_fields_is_a_clear_error() -> None:
    scripted = ScriptedModel(["{}"], capabilities=Capabilities(output_mode="native"))
    request = ModelRequest(system=None, messages=[Message("user", "Paris?")])
    with pytest.raises(ConfigError, match="declares output_mode='native' but has no"):
        OutputSpec(City).prepare(request, scripted, forced=False)


def test_a_declaration_that_is_not_capabilities_is_refused() -> None:
    class Confused:
        name = "confused"
        model = "m"

        def capabilities(self) -> dict[str, Any]:
            return {"images": False}

    with pytest.raises(ConfigError, match=r"capabilities\(\) returned"):
        capabilities(Confused())  # type: ignore[arg-type]
