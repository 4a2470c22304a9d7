"""The kernel tools on a plain namespace: inventory, inspection and bad input.

(The same tools in a real ipykernel: tests/kernel_agent.)
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np
import pandas as pd
import pytest

from nbagent import Agent
from nbagent.kernel import kernel_tools
from nbagent.kernel.inspect import InspectError
from nbagent.testing import ScriptedModel, call, reply


def tools(namespace: dict[str, Any]) -> dict[str, Any]:
    return {t.name: t for t in kernel_tools(namespace=namespace)}


class BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("repr is broken")


class SneakyList(list):  # type: ignore[type-arg]
    def __len__(self) -> int:
        raise RuntimeError("len is broken")

    def __repr__(self) -> str:
        raise RuntimeError("repr is broken")


class HangingRepr:
    def __init__(self) -> None:
        self.release = threading.Event()

    def __repr__(self) -> str:
        self.release.wait(30)
        return "finally"

    def __len__(self) -> int:
        raise RuntimeError("len is broken too")


def test_inventory_lists_data_and_leaves_out_code_and_ipython_names() -> None:
    import json as json_module

    ns: dict[str, Any] = {
        "json_module": json_module,
        "In": [""],
        "Out": {},
        "_": None,
        "_i3": "x",
        "_private": 1,
        "helper": lambda: 1,
        "Klass": type("Klass", (), {}),
        "df": pd.DataFrame({"a": [1, 2], "b": ["x", None]}),
        "s": pd.Series([1.5, 2.5], name="price"),
        "arr": np.zeros((3, 4)),
        "items": [1, 2, 3],
        "rate": 0.25,
        "title": "Quarterly report",
        "bad": BadRepr(),
        "sneaky": SneakyList([1]),
    }
    text = tools(ns)["list_variables"]()
    assert text.splitlines() == [
        "8 variables in the kernel:",
        "arr: ndarray shape (3, 4), dtype float64",
        "df: DataFrame 2 rows × 2 columns [a: int64, b: str]",
        "s: Series 2 rows, dtype float64 name='price'",
        f"sneaky: {SneakyList.__module__}.SneakyList",
        f"bad: {BadRepr.__module__}.BadRepr",
        "title: str, 16 chars = 'Quarterly report'",
        "rate: float = 0.25",
        "items: list, 3 items",
    ]


def test_inventory_of_10000_variables_stays_bounded_and_says_what_it_left_out() -> None:
    ns: dict[str, Any] = {f"v{i}": i for i in range(9_900)}
    for i in range(100):
        ns[f"frame{i}"] = pd.DataFrame({"x": np.arange(1_000 + i)})
    ns["hang"] = HangingRepr()  # neither its repr nor its len is called
    text = tools(ns)["list_variables"]()
    assert len(text) < 4_500
    assert text.startswith("10001 variables in the kernel, ")
    assert text.splitlines()[1].startswith("frame99: DataFrame 1099 rows")  # largest first
    assert "more not listed: " in text.splitlines()[-1]
    ns["hang"].release.set()


def test_inspect_variable_of_a_dataframe() -> None:
    ns = {"sales": pd.DataFrame({"region": ["n", "s", None], "revenue": [1.0, 2.0, 4.0]})}
    text = tools(ns)["inspect_variable"]("sales", rows=2)
    assert text.startswith("sales: DataFrame shape=(3, 2)")
    assert "null counts:\nregion     1\nrevenue    0" in text
    assert "describe():" in text and "mean" in text
    assert "first 2 rows:" in text


def test_inspect_dotted_and_subscripted_names() -> None:
    ns = {"df": pd.DataFrame({"a": [1]}), "config": {"paths": ["/data"]}}
    t = tools(ns)["inspect_variable"]
    assert "Index(['a']" in t("df.columns")
    assert "repr: '/data'" in t("config['paths'][0]")
    with pytest.raises(InspectError, match=r"No variable named 'confg'.*Close matches: config"):
        t("confg")
    with pytest.raises(InspectError, match="no such attribute"):
        t("df.colums")
    with pytest.raises(InspectError, match="use a name"):
        t("__import__('os').system('true')")


def test_inspect_runs_no_repr_or_len_of_a_user_class() -> None:
    # Issue 19 item 3: inspection reads; a user's __repr__/__len__ is not run at all.
    text = tools({"bad": BadRepr()})["inspect_variable"]("bad")
    assert "repr: not evaluated" in text and "raised" not in text
    text = tools({"sneaky": SneakyList([1])})["inspect_variable"]("sneaky")
    assert "length: 1 (as a list)" in text and "items (list's view): [1]" in text
    assert "raised" not in text


async def test_a_hanging_repr_does_not_hold_inspection() -> None:
    hang = HangingRepr()
    inspect_tool = tools({"hang": hang})["inspect_variable"]
    inspect_tool.timeout = 5.0

    def script(request: Any) -> Any:
        if request.round_index == 0:
            return reply("", [call("inspect_variable", name="hang")])
        return reply("done")

    agent = Agent(ScriptedModel(script), tools=[inspect_tool], store=None)
    result = await agent.run("look")
    (tool_round,) = result.rounds
    assert tool_round.results[0].ok
    assert "repr: not evaluated" in tool_round.results[0].content
    assert not hang.release.is_set()  # the repr never ran (it would have waited 30 s)


def test_run_python_outside_a_kernel_runs_in_the_namespace() -> None:
    ns: dict[str, Any] = {"x": 2}
    output = tools(ns)["run_python"]("y = x ** 10\nprint('hi')\ny")
    assert ns["y"] == 1024
    assert output.model_text(1000) == "stdout:\nhi\n\nvalue:\n1024"
    assert math.isclose(output.value, 1024)


def test_propose_cell_outside_a_notebook_says_so() -> None:
    text = tools({})["propose_cell"]("print(1)")
    assert text.startswith("Not proposed: there is no notebook front end here")
