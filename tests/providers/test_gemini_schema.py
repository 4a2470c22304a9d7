"""Any tool schema nbagent generates must become a valid Gemini ``parameters`` schema.

The checker below encodes the OpenAPI subset of WIRE_FORMATS section 3 (one type per
node from Gemini's list, string-only enums, no ``$ref``/``$defs``/``const``/
``additionalProperties``/``exclusiveMinimum``, ``required`` naming existing properties,
no OBJECT with empty ``properties``, only the formats Gemini accepts). Every
signature is turned into a real nbagent Tool, so nbagent's own schema generator runs.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import pathlib
import uuid
from typing import Annotated, Any, Literal

import pydantic
import pytest
from typing_extensions import TypedDict

from nbagent import Tool
from nbagent.messages import Message, ToolSpec
from nbagent.providers.base import ModelRequest
from nbagent.providers.gemini import GeminiProvider
from nbagent.providers.schema_convert import NameMap, to_gemini_schema

build_body = GeminiProvider("gemini-test", api_key="k", env={}).build_body
"""The request body a Gemini provider builds (no request is sent)."""

_TYPES = {"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"}
_KEYS = {
    "type", "format", "description", "nullable", "enum", "properties", "required", "items",
    "anyOf", "minItems", "maxItems", "minimum", "maximum", "minLength", "maxLength", "pattern",
    "minProperties", "maxProperties", "propertyOrdering", "title",
}  # fmt: skip
_FORMATS = {
    "STRING": {"enum", "date-time"},
    "INTEGER": {"int32", "int64"},
    "NUMBER": {"float", "double"},
}


def check_gemini_schema(schema: Any, path: str = "parameters") -> None:
    assert isinstance(schema, dict), path
    assert set(schema) <= _KEYS, f"{path}: unsupported keys {set(schema) - _KEYS}"
    if "type" in schema:
        assert schema["type"] in _TYPES, f"{path}: type {schema['type']!r}"
    else:
        assert "anyOf" in schema, f"{path}: no type"
    kind = schema.get("type")
    if "enum" in schema:
        assert kind == "STRING" and all(isinstance(v, str) for v in schema["enum"]), path
    if "properties" in schema:
        assert kind == "OBJECT" and schema["properties"], path
        for name, sub in schema["properties"].items():
            check_gemini_schema(sub, f"{path}.{name}")
    if "required" in schema:
        assert set(schema["required"]) <= set(schema.get("properties", {})), path
    if kind == "ARRAY":
        check_gemini_schema(schema.get("items"), f"{path}[]")
    else:
        assert "items" not in schema, path
    if "format" in schema:
        assert schema["format"] in _FORMATS.get(kind, set()), f"{path}: format {schema['format']}"
    for index, sub in enumerate(schema.get("anyOf", [])):
        check_gemini_schema(sub, f"{path}|{index}")
    if "description" in schema:
        assert isinstance(schema["description"], str)


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Point(pydantic.BaseModel):
    x: int
    y: Annotated[int, pydantic.Field(gt=0, description="positive")]


class Tree(pydantic.BaseModel):
    value: int
    children: list[Tree] = []


class Cat(pydantic.BaseModel):
    kind: Literal["cat"]
    lives: int = 9


class Dog(pydantic.BaseModel):
    kind: Literal["dog"]
    good: bool = True


class Movie(TypedDict):
    title: str
    year: int


@dataclasses.dataclass
class Span:
    start: datetime.date
    end: datetime.date | None = None


def scalars(a: int, b: float, c: str, d: bool = False, e: bytes = b"") -> None:
    """Scalars.

    Args:
        a: an integer
        b: a float
    """


def optionals(
    a: int | None = None, b: int | str = 1, c: int | None | str = None, d: Any = None
) -> None: ...


def literals(
    mode: Literal["fast"],
    level: Literal[1, 2] = 1,
    mixed: Literal["a", 1] = "a",
    maybe: Literal["x", None] = None,
) -> None: ...


def enums(color: Color, level: Level = Level.LOW, colors: list[Color] = []) -> None: ...  # noqa: B006


def containers(
    xs: list[int],
    m: dict[str, int],
    t: tuple[int, str],
    same: tuple[int, int],
    var: tuple[int, ...],
    s: set[str],
    f: frozenset[int] = frozenset(),
    nested: list[list[float]] = [],  # noqa: B006
    anything: list = [],  # noqa: B006
    free: dict = {},  # noqa: B006
) -> None: ...


def formats(
    when: datetime.datetime,
    day: datetime.date,
    at: datetime.time,
    gap: datetime.timedelta,
    ident: uuid.UUID,
    money: decimal.Decimal,
    path: pathlib.Path,
    url: pydantic.AnyUrl,
    email: Annotated[str, pydantic.Field(pattern=r"^\S+@\S+$", max_length=50)],
) -> None: ...


def models(
    p: Point,
    q: Point | None,
    points: list[Point],
    by_name: dict[str, Point],
    tree: Tree,
    movie: Movie,
    span: Span,
    pet: Annotated[Cat | Dog, pydantic.Field(discriminator="kind")],
    pets: list[Cat | Dog] = [],  # noqa: B006
) -> None: ...


def constrained(
    n: Annotated[int, pydantic.Field(ge=0, le=10, multiple_of=2)],
    x: Annotated[float, pydantic.Field(gt=0, lt=1)],
    items: Annotated[list[str], pydantic.Field(min_length=1, max_length=3)],
) -> None: ...


def no_arguments() -> None: ...


SIGNATURES = [
    scalars,
    optionals,
    literals,
    enums,
    containers,
    formats,
    models,
    constrained,
    no_arguments,
]


@pytest.mark.parametrize("fn", SIGNATURES, ids=lambda f: f.__name__)
def test_every_generated_schema_converts_to_the_gemini_subset(fn):
    tool = Tool(fn)
    original = json.dumps(tool.parameters, sort_keys=True)
    converted = to_gemini_schema(tool.parameters)
    assert json.dumps(tool.parameters, sort_keys=True) == original  # input untouched
    text = json.dumps(converted)
    for banned in (
        "$ref",
        "$defs",
        "const",
        "additionalProperties",
        "exclusiveM",
        "prefixItems",
        "oneOf",
        "allOf",
    ):
        assert banned not in text
    assert converted["type"] == "OBJECT"
    check_gemini_schema(converted)
    # Every parameter survives, with its requiredness.
    assert set(converted.get("properties", {})) == set(tool.parameters.get("properties", {}))
    assert set(converted.get("required", [])) == set(tool.parameters.get("required", []))
    # And the declaration built for a request is valid too (no parameters without arguments).
    body = build_body(ModelRequest(None, [Message("user", "hi")], tools=[tool.spec]))
    declaration = body["tools"][0]["functionDeclarations"][0]
    if converted.get("properties"):
        assert declaration["parameters"] == converted
    else:
        assert "parameters" not in declaration


def test_details_that_matter_to_the_model_are_kept():
    props = to_gemini_schema(Tool(models).parameters)["properties"]
    # $ref inlined, Optional -> nullable, field description kept.
    assert props["q"]["nullable"] is True and props["q"]["type"] == "OBJECT"
    assert props["p"]["properties"]["y"]["description"].startswith("positive")
    assert "greater than 0" in props["p"]["properties"]["y"]["description"]
    assert props["points"]["items"]["properties"]["x"] == {"type": "INTEGER", "title": "X"}
    # Recursion: expanded once, then a free object.
    child = props["tree"]["properties"]["children"]["items"]
    assert child["type"] == "OBJECT" and "Tree" in child["description"]
    # Discriminated union -> anyOf of both shapes with their const as one-value enums.
    kinds = [
        {k: v for k, v in alt["properties"]["kind"].items() if k != "title"}
        for alt in props["pet"]["anyOf"]
    ]
    assert kinds == [{"type": "STRING", "enum": ["cat"]}, {"type": "STRING", "enum": ["dog"]}]

    lit = to_gemini_schema(Tool(literals).parameters)["properties"]
    assert lit["mode"] == {"type": "STRING", "enum": ["fast"]}
    assert lit["level"]["type"] == "INTEGER" and "one of 1, 2" in lit["level"]["description"]
    assert lit["maybe"]["enum"] == ["x"] and lit["maybe"]["nullable"] is True

    fmt = to_gemini_schema(Tool(formats).parameters)["properties"]
    assert fmt["when"] == {"type": "STRING", "format": "date-time"}
    assert fmt["ident"]["description"] == "format: uuid"
    assert fmt["email"]["pattern"] == r"^\S+@\S+$" and fmt["email"]["maxLength"] == 50

    opt = to_gemini_schema(Tool(optionals).parameters)["properties"]
    assert opt["a"]["type"] == "INTEGER" and opt["a"]["nullable"] is True
    assert opt["b"]["anyOf"] == [{"type": "INTEGER"}, {"type": "STRING"}]


def test_json_schema_type_lists_and_unknown_refs():
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": ["string", "null"]},
            "b": {"type": ["integer", "string"]},
            "c": {"$ref": "#/$defs/Missing"},
            "d": {"type": "null"},
            "e": {
                "allOf": [
                    {"type": "object", "properties": {"x": {"type": "integer"}}},
                    {"required": ["x"]},
                ]
            },
        },
        "required": ["a", "zzz"],
    }
    out = to_gemini_schema(schema)
    check_gemini_schema(out)
    assert out["properties"]["a"] == {"type": "STRING", "nullable": True}
    assert out["properties"]["b"] == {"anyOf": [{"type": "INTEGER"}, {"type": "STRING"}]}
    assert "unresolvable reference" in out["properties"]["c"]["description"]
    assert out["properties"]["e"]["required"] == ["x"]
    assert out["required"] == ["a"]


def test_name_map():
    names = NameMap(
        ["ok_name", "a.b", "a_b", "9lives", "x" * 200], allowed="a-zA-Z0-9_-", max_len=128
    )
    assert names.wire("ok_name") == "ok_name"
    assert names.wire("a.b") == "a_b" and names.wire("a_b") == "a_b_2"  # no collision
    assert names.real("a_b_2") == "a_b" and names.real("a_b") == "a.b"
    assert len(names.wire("x" * 200)) == 128
    gemini = NameMap(
        ["9lives", "ns:tool.v2"], allowed="a-zA-Z0-9_.:-", max_len=128, first="a-zA-Z_"
    )
    assert gemini.wire("9lives") == "_9lives" and gemini.wire("ns:tool.v2") == "ns:tool.v2"
    assert gemini.real("unknown") == "unknown"


def test_history_tools_no_longer_offered_are_declared_with_calls_forbidden():
    """A second run without tools: the history still holds calls; the request declares
    those tools (so Gemini and Anthropic accept the history) and forbids calling them."""
    from nbagent.messages import ToolCall, ToolResult, ToolRound
    from nbagent.providers.anthropic import AnthropicProvider

    anthropic_body = AnthropicProvider("m", api_key="k", env={}).build_body

    round_ = ToolRound(
        None, [ToolCall("c1", "add", {"a": 1})], [ToolResult("c1", "add", True, "1")]
    )
    messages = [
        Message("user", "q"),
        Message("assistant", "a", rounds=[round_]),
        Message("user", "again"),
    ]
    request = ModelRequest(None, messages, tools=[])
    gemini = build_body(request)
    assert gemini["tools"] == [{"functionDeclarations": [{"name": "add"}]}]
    assert gemini["toolConfig"] == {"functionCallingConfig": {"mode": "NONE"}}
    anthropic = anthropic_body(request)
    assert [t["name"] for t in anthropic["tools"]] == ["add"]
    assert anthropic["tool_choice"] == {"type": "none"}
    offered = ModelRequest(
        None, messages, tools=[ToolSpec("other", "", {"type": "object", "properties": {}})]
    )
    assert [d["name"] for d in build_body(offered)["tools"][0]["functionDeclarations"]] == ["other"]
