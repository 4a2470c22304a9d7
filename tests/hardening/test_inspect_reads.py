"""Item 3, the attacks in detail: inspect_variable on hostile values runs none of their code.

Each value records any code of its own that runs in ``effects``; every inspection
must leave it empty. (The same tool in a real kernel: test_kernel_consent.py.)
"""

from __future__ import annotations

import collections
from typing import Any

import pytest

from nbagent.kernel import kernel_tools
from nbagent.kernel.inspect import InspectError

effects: list[str] = []


class CollidingKey:
    """A dict key whose hash equals the string "delete"'s: lookups would call __eq__."""

    def __hash__(self) -> int:
        return hash("delete")

    def __eq__(self, other: object) -> bool:
        effects.append("key __eq__")
        return False


class DictProperty:
    @property
    def __dict__(self) -> dict[str, Any]:  # type: ignore[override]
        effects.append("__dict__ property")
        return {"x": 1}


class Meta(type):
    def __getattribute__(cls, name: str) -> Any:
        effects.append(f"metaclass getattribute {name}")
        return super().__getattribute__(name)


class WithMeta(metaclass=Meta):
    value = 5


class ClassProperty:
    @property
    def __class__(self) -> type:  # type: ignore[override]
        effects.append("__class__ property")
        return int


class FakeFrame:
    __module__ = "pandas.core.frame"  # but pandas.core.frame.FakeFrame does not exist
    __qualname__ = "DataFrame"

    def __getitem__(self, key: str) -> int:
        effects.append("fake frame getitem")
        return 1


class Descriptor:
    def __get__(self, obj: object, kind: type | None = None) -> int:
        effects.append("descriptor __get__")
        return 1


class Holder:
    computed = Descriptor()

    def __init__(self) -> None:
        self.plain = "stored"


@pytest.fixture
def inspect_tool() -> Any:
    shelf = {"delete": "gone"}
    shelf[CollidingKey()] = "other"  # type: ignore[index]
    namespace = {
        "shelf": shelf,
        "dd": collections.defaultdict(list, a=[1]),
        "point": collections.namedtuple("Point", "x y")(1, 2),
        "odd": DictProperty(),
        "meta": WithMeta(),
        "liar": ClassProperty(),
        "fake": FakeFrame(),
        "holder": Holder(),
    }
    tool = {t.name: t for t in kernel_tools(namespace=namespace)}["inspect_variable"]
    effects.clear()  # building the dict compared the colliding key once
    yield tool, namespace
    assert effects == []


CASES = {
    "shelf['delete']": "shelf['delete']: str\nlength: 4\nrepr: 'gone'",
    "shelf": "CollidingKey object>: 'other'}",
    "dd['a']": "dd['a']: list",
    "point.x": "point.x: int\nrepr: 1",
    "odd": "DictProperty\nrepr: not evaluated",
    "meta.value": "meta.value: int\nrepr: 5",
    "liar": "ClassProperty\nrepr: not evaluated",
    "fake['a']": "fake['a']: not evaluated. pandas.core.frame.DataFrame is not a plain dict",
    "holder.plain": "holder.plain: str",
    "holder.computed": "holder.computed: not evaluated. It is computed by its class's code",
}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_values_are_read_without_their_code(inspect_tool: Any, name: str):
    tool, _ = inspect_tool
    assert CASES[name] in tool(name)


def test_a_missing_key_of_a_defaultdict_adds_nothing(inspect_tool: Any):
    tool, namespace = inspect_tool
    with pytest.raises(InspectError, match="KeyError"):
        tool("dd['missing']")
    assert dict(namespace["dd"]) == {"a": [1]}
