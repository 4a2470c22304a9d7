"""Typed output on the embedded model: its answer decodes under the schema's grammar.

The real SmolLM2 through llama.cpp (no mocks): ``output_type=`` gives llama.cpp the
schema as ``json_schema``, so even a 135M model writes JSON of the right shape, and
the run returns the validated value.
"""

from __future__ import annotations

import json
from typing import Literal

import pytest
from pydantic import BaseModel

from nbagent import Agent
from nbagent.messages import Message
from nbagent.providers.base import ModelRequest, TextChunk
from nbagent.run.output import OutputSpec

pytestmark = pytest.mark.local_model


class City(BaseModel):
    name: str
    population: int


class Label(BaseModel):
    """Field names and values no model writes unprompted: only the grammar gets them right."""

    zq_code: Literal["alpha", "beta"]
    count_of_things: int


class Node(BaseModel):
    name: str
    children: list[Node]


async def answer(provider, request: ModelRequest) -> str:
    return "".join([e.text async for e in provider.stream(request) if isinstance(e, TextChunk)])


def test_run_sync_returns_a_validated_value(local):
    agent = Agent("local", tools=[], store=None)
    result = agent.run_sync(
        "Paris has 2100000 inhabitants. Give the city and its population.", output_type=City
    )
    assert result.stop_reason == "complete"
    assert isinstance(result.output, City)
    assert result.output == City(name="Paris", population=2100000)
    assert json.loads(result.text) == {"name": "Paris", "population": 2100000}


async def test_the_grammar_holds_where_the_model_would_not_comply(local):
    request = ModelRequest(system=None, messages=[Message("user", "Say hello to me.")])
    untyped = await answer(local, request)
    with pytest.raises(ValueError):
        Label.model_validate_json(untyped)  # what the model writes on its own
    typed = await answer(local, OutputSpec(Label).prepare(request, local, forced=False))
    assert isinstance(Label.model_validate_json(typed), Label)  # the first answer is valid
    result = Agent("local", tools=[], store=None).run_sync("Say hello.", output_type=Label)
    assert result.stop_reason == "complete" and isinstance(result.output, Label)


def test_a_list_of_records_and_a_recursive_type(local):
    agent = Agent("local", tools=[], store=None)
    cities = agent.run_sync(
        "Oslo has 700000 people and Bergen has 290000 people. List the cities.",
        output_type=list[City],
    )
    assert cities.stop_reason == "complete"
    assert cities.output == [City(name="Oslo", population=700000),
                             City(name="Bergen", population=290000)]  # fmt: skip
    assert list(cities.to_frame()["population"]) == [700000, 290000]
    tree = agent.run_sync(
        "A tree named root with two children named a and b, which have no children.",
        output_type=Node,
        max_output_tokens=200,
    )
    # A recursive schema becomes a recursive grammar: any depth is well formed.
    assert tree.stop_reason == "complete" and isinstance(tree.output, Node), tree.text
    assert tree.output.name == "root" and tree.output.children[0].name == "a"


async def test_a_tool_call_keeps_its_own_grammar_and_the_answer_follows_the_schema(local, tools):
    # The provider itself: the request a typed run sends after the decision.
    spec = OutputSpec(City)
    request = ModelRequest(
        system=None,
        messages=[Message("user", "Check the current weather in Oslo.")],
        tools=[t.spec for t in tools],
    )
    typed = spec.prepare(request, local, forced=False)
    assert typed.extra["json_schema"] == spec.schema
    events = [event async for event in local.stream(typed)]
    calls = [e.call for e in events if hasattr(e, "call")]
    assert [c.name for c in calls] == ["get_weather"]  # arguments: the tool's grammar
    assert calls[0].arguments == {"city": "Oslo"}
    # Without tools the answer is JSON of the schema's shape.
    plain = spec.prepare(
        ModelRequest(system=None, messages=[Message("user", "Oslo has 700000 people.")]),
        local,
        forced=False,
    )
    assert set(json.loads(await answer(local, plain))) == {"name", "population"}


class Item(BaseModel):
    name: str
    quantity: int
    unit_price: float


SHOPPING = "3 blue mugs at $4.50, a dozen pencils (0.35 apiece), 2 notebooks for 2.99"


def test_values_not_in_the_prompt_make_a_record_doubtful():
    from nbagent.providers.local.typed_check import doubtful_records

    answer = json.dumps(
        {
            "value": [
                {"name": "Blue Mug", "quantity": 3, "unit_price": 4.5},
                {"name": "Dollar", "quantity": 2, "unit_price": 2.99},
                {"name": "notebooks", "quantity": 2, "unit_price": 2.99},
            ]
        }
    )
    assert doubtful_records(answer, SHOPPING) == ['record 2: "Dollar" not in the prompt']


def test_typed_records_on_the_real_model_are_checked_against_the_prompt(local):
    agent = Agent("local", tools=[], store=None)
    result = agent.run_sync(SHOPPING, output_type=list[Item])
    assert result.stop_reason == "complete"
    records = (result.message.provider_data or {})["local"].get("doubtful_records", [])
    # Every record whose values are not all in the prompt is listed, none other.
    for index, item in enumerate(result.output, start=1):
        found = item.name.lower() in SHOPPING.lower() and str(item.quantity) in SHOPPING
        listed = any(line.startswith(f"record {index}:") for line in records)
        assert listed or found, (item, records)
    if records:  # and the footer says so
        from nbagent.render import footer_text

        assert "doubtful: record" in footer_text(result)
