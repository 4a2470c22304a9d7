"""The JSON schema a model is told for each tool: annotations and docstring styles."""

from __future__ import annotations

import dataclasses
import enum
import functools
from typing import Annotated, Any, Literal, Optional, Union

import pydantic
import pytest

from nbagent import REGISTRY, Tool, tool


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Address(pydantic.BaseModel):
    street: str
    zip_code: str = pydantic.Field(description="Postal code")


@dataclasses.dataclass
class Box:
    width: float
    height: float = 1.0


class Frame:
    """Stands in for a DataFrame parameter."""


def props(t: Tool) -> dict[str, Any]:
    return t.parameters["properties"]


def test_basic_types_defaults_and_required():
    @tool
    def f(a: int, b: float, c: str, d: bool = True, e: int = 3) -> None:
        """Do f."""

    assert f.parameters == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "number"},
            "c": {"type": "string"},
            "d": {"type": "boolean", "default": True},
            "e": {"type": "integer", "default": 3},
        },
        "required": ["a", "b", "c"],
    }
    assert f.description == "Do f."
    assert f.spec.to_dict()["name"] == "f"


def test_literal_enum_optional_union_list_dict():
    @tool
    def g(
        mode: Literal["fast", "slow"],
        color: Color,
        limit: Optional[int] = None,  # noqa: UP045 - the spelling under test
        key: Union[int, str] = 0,  # noqa: UP007 - the spelling under test
        tags: list[str] | None = None,
        weights: dict[str, float] | None = None,
        pair: tuple[int, int] = (1, 2),
    ) -> None:
        """Do g."""

    p = props(g)
    assert p["mode"] == {"enum": ["fast", "slow"], "type": "string"}
    ref = p["color"]["$ref"]
    assert ref == "#/$defs/Color"
    assert g.parameters["$defs"]["Color"]["enum"] == ["red", "green"]
    assert p["limit"] == {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}
    assert p["key"] == {"anyOf": [{"type": "integer"}, {"type": "string"}], "default": 0}
    assert p["tags"]["anyOf"][0] == {"type": "array", "items": {"type": "string"}}
    assert p["weights"]["anyOf"][0] == {
        "type": "object",
        "additionalProperties": {"type": "number"},
    }
    assert p["pair"]["type"] == "array" and p["pair"]["default"] == [1, 2]
    assert g.parameters["required"] == ["mode", "color"]


def test_pydantic_models_and_dataclasses_become_nested_objects():
    @tool
    def ship(to: Address, box: Box) -> str:
        """Ship a box."""
        return f"{to.street}:{box.width}x{box.height}"

    defs = ship.parameters["$defs"]
    assert props(ship)["to"] == {"$ref": "#/$defs/Address"}
    assert defs["Address"]["properties"]["zip_code"]["description"] == "Postal code"
    assert defs["Address"]["required"] == ["street", "zip_code"]
    assert defs["Box"]["properties"]["height"] == {
        "default": 1.0,
        "title": "Height",
        "type": "number",
    }
    # Validation builds the declared types, so the function gets real instances.
    from nbagent.messages import ToolCall

    args = ship.validate(
        ToolCall("1", "ship", {"to": {"street": "Main", "zip_code": "1"}, "box": {"width": 2}})
    )
    assert isinstance(args["to"], Address) and isinstance(args["box"], Box)
    assert ship.fn(**args) == "Main:2.0x1.0"


def test_annotated_field_description_and_unannotated_default():
    with pytest.warns(UserWarning, match="parameter 'anything' has no type hint"):

        @tool
        def h(
            n: Annotated[int, pydantic.Field(description="How many", ge=1)],
            label="x",
            anything=None,
        ) -> None:
            """Do h."""

    p = props(h)
    assert p["n"] == {"type": "integer", "description": "How many", "minimum": 1}
    assert p["label"] == {"type": "string", "default": "x"}
    assert p["anything"] == {"default": None}


GOOGLE = """Find flights between two cities.

    Searches the cached timetable.

    Args:
        origin: IATA code of the departure airport.
        destination: IATA code of the arrival airport.
        max_stops: Most stops allowed.
    """

NUMPY = """Find flights between two cities.

    Searches the cached timetable.

    Parameters
    ----------
    origin : str
        IATA code of the departure airport.
    destination : str
        IATA code of the arrival airport.
    max_stops : int
        Most stops allowed.
    """

REST = """Find flights between two cities.

    Searches the cached timetable.

    :param origin: IATA code of the departure airport.
    :param destination: IATA code of the arrival airport.
    :param max_stops: Most stops allowed.
    :returns: the flights.
    """


@pytest.mark.parametrize("style", [GOOGLE, NUMPY, REST], ids=["google", "numpy", "rest"])
def test_docstring_styles_give_summary_and_parameter_descriptions(style):
    def find_flights(origin: str, destination: str, max_stops: int = 1) -> list[str]:
        return []

    find_flights.__doc__ = style
    t = Tool(find_flights)
    assert t.description == "Find flights between two cities.\n\nSearches the cached timetable."
    p = props(t)
    assert p["origin"]["description"] == "IATA code of the departure airport."
    assert p["destination"]["description"] == "IATA code of the arrival airport."
    assert p["max_stops"] == {"type": "integer", "default": 1, "description": "Most stops allowed."}


def test_options_override_name_and_description():
    @tool(name="lookup", description="Custom text.", timeout=5, sequential=True)
    def some_function(q: str) -> str:
        """Ignored."""
        return q

    assert some_function.name == "lookup"
    assert some_function.spec.description == "Custom text."
    assert some_function.timeout == 5 and some_function.sequential
    assert REGISTRY["lookup"] is some_function
    assert some_function("hi") == "hi"  # still callable as the function


def test_partial_hides_fixed_keywords_and_keeps_the_real_docstring():
    def scale(values: list[float], factor: float, offset: float = 0.0) -> list[float]:
        """Scale values.

        Args:
            values: Numbers to scale.
            factor: Multiplier.
            offset: Added afterwards.
        """
        return [v * factor + offset for v in values]

    double = Tool(functools.partial(scale, factor=2.0))
    assert double.name == "scale"
    assert double.description == "Scale values."
    assert set(props(double)) == {"values", "offset"}
    assert props(double)["values"]["description"] == "Numbers to scale."
    from nbagent.messages import ToolCall

    args = double.validate(ToolCall("1", "scale", {"values": [1, 2]}))
    assert double.fn(**args) == [2.0, 4.0]


def test_methods_bound_and_decorated_in_a_class():
    class Store:
        def __init__(self, prefix: str) -> None:
            self.prefix = prefix

        @tool
        def describe(self, item: str) -> str:
            """Describe an item.

            Args:
                item: The item name.
            """
            return f"{self.prefix}:{item}"

        def plain(self, n: int) -> int:
            """Plain method."""
            return n + len(self.prefix)

    s = Store("shop")
    bound = s.describe
    assert isinstance(bound, Tool)
    assert set(props(bound)) == {"item"}
    assert props(bound)["item"]["description"] == "The item name."
    assert bound(item="x") == "shop:x"
    assert "describe" not in REGISTRY  # unbound, it would lack self
    plain = Tool(s.plain)
    assert set(props(plain)) == {"n"} and plain.description == "Plain method."


def test_async_function_and_callable_object():
    @tool
    async def fetch(url: str) -> str:
        """Fetch a URL."""
        return url

    class Counter:
        """Counts."""

        def __call__(self, step: int = 1) -> int:
            """Add step."""
            return step

    assert fetch.is_async
    counter = Tool(Counter(), name="counter")
    assert not counter.is_async
    assert counter.description == "Add step."
    assert props(counter) == {"step": {"type": "integer", "default": 1}}


def test_varargs_are_not_offered_to_the_model():
    @tool
    def v(a: int, *rest: int, **options: Any) -> int:
        """V."""
        return a

    assert set(props(v)) == {"a"}


def test_a_tool_the_model_knows_nothing_about_warns_naming_the_parameters():
    with pytest.warns(UserWarning) as caught:

        @tool
        def mystery(a, b, scale=2.0):
            return a * b * scale

    (warning,) = caught.list
    assert str(warning.message).startswith(
        "tool 'mystery': parameters 'a', 'b' have no type hint and no docstring"
    )
    assert warning.filename == __file__  # points at the user's line, not at nbagent
    assert props(mystery)["scale"] == {"type": "number", "default": 2.0}  # still a tool

    with pytest.warns(UserWarning, match="parameter 'b' has no type hint and no description"):

        @tool
        def half_documented(a: int, b):
            """Documented, but only a has a hint."""

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # typed, or described in the docstring: no warning

        @tool
        def fine(a: int, b):
            """Fine.

            Args:
                a: a number.
                b: anything at all.
            """


def test_a_schema_error_is_one_short_traceback():
    import traceback

    with pytest.raises(TypeError) as info:

        @tool
        def summarize(df: Frame, *cols: str, **opts: Any) -> str:
            """S."""
            return ""

    assert info.value.__cause__ is None and info.value.__suppress_context__
    text = "".join(traceback.format_exception(info.value))
    assert "pydantic/" not in text and "nbagent/tools/schema.py" not in text
    assert "direct cause" not in text and "During handling" not in text
    # the test's line, then tool()/wrap's raise: nothing deeper inside nbagent
    assert text.count('File "') <= 3, text


def test_unsupported_parameter_type_gives_a_clear_error():
    with pytest.raises(TypeError, match="parameter 'df' has type Frame, which a model cannot"):

        @tool
        def summarize(df: Frame, column: str) -> str:
            """S."""
            return column


def test_unresolvable_annotation_names_the_parameter():
    class Local:
        pass

    with pytest.raises(
        TypeError, match="annotation 'Local' of parameter 'thing' cannot be resolved"
    ):

        @tool
        def use(thing: Local) -> None:
            """U."""


def test_rewrapping_a_tool_keeps_its_schema():
    @tool
    def base(q: str) -> str:
        """Search."""
        return q

    renamed = tool(base, name="search", timeout=2)
    assert renamed.name == "search" and renamed.timeout == 2
    assert renamed.parameters == base.parameters and renamed.description == "Search."
