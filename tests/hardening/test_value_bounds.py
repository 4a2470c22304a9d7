"""Every value renderer has depth and size limits; a cell's display always ends.

Issue 10, item 7: a tool returning a list nested 100,000 deep made the HTML
rendering raise ``RecursionError``; in a kernel the ``%%agent`` cell errored and
its live display stayed at "running". Neighbours: cycles, a dict nested deep, a
very wide nested value, unprintable items, ``{name}`` prompt interpolation, the
stored preview, the Markdown export.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nbagent._internal.values import preview_value, prompt_text
from nbagent.render import render_result_html, render_result_markdown, render_result_text
from nbagent.testing import call, reply
from nbagent.tools import tool
from tests.support import history
from tests.support.agents import scripted_agent
from tests.support.history import query
from tests.support.kernel import Kernel, kernel_environment, last_html

history_home = history.history_home  # the suite's one private-history fixture


def nested_list(depth: int) -> list[Any]:
    top: list[Any] = []
    inner = top
    for _ in range(depth):
        inner.append([])
        inner = inner[0]
    return top


def nested_dict(depth: int) -> dict[str, Any]:
    top: dict[str, Any] = {}
    inner = top
    for _ in range(depth):
        inner["k"] = {}
        inner = inner["k"]
    return top


class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    def __str__(self) -> str:
        raise RuntimeError("no str")


def cyclic() -> Any:
    a: list[Any] = [1, 2]
    a.append(a)
    d: dict[str, Any] = {"self": None, "list": a}
    d["self"] = d
    return d


def wide() -> Any:
    return [[[["x" * 50] * 200] * 200] * 200]


VALUES = {
    "list nested 100,000 deep": lambda: nested_list(100_000),
    "dict nested 100,000 deep": lambda: nested_dict(100_000),
    "cycles": cyclic,
    "200x200x200 nested": wide,
    "unprintable items": lambda: {"a": [Unprintable()], "b": nested_list(50)},
}


@pytest.mark.parametrize("name", list(VALUES))
def test_a_hostile_value_renders_bounded_everywhere(history_home, name):
    make = VALUES[name]

    @tool(register=False)
    def produce() -> Any:
        """Returns the hostile value."""
        return make()

    agent = scripted_agent([reply(calls=[call("produce")]), "done"], tools=[produce])
    result = agent.run_sync("go")
    assert result.output == "done"
    assert result.rounds[0].results[0].ok
    assert len(result.rounds[0].results[0].content) < 100_000
    for render in (render_result_html, render_result_markdown, render_result_text):
        assert len(render(result)) < 2_000_000
    assert len(agent.conversation.to_markdown()) < 2_000_000
    db = history_home / history.FILENAME
    assert query(db, "PRAGMA integrity_check") == [("ok",)]
    assert query(db, "SELECT count(*) FROM tool_results") == [(1,)]
    _, preview = preview_value(make())
    assert preview is not None and len(preview) < 10_000
    assert len(prompt_text(make())) < 10_000


def test_the_placeholder_says_what_was_left_out():
    @tool(register=False)
    def deep() -> Any:
        """Returns a list nested 100,000 deep."""
        return nested_list(100_000)

    agent = scripted_agent([reply(calls=[call("deep")]), "done"], tools=[deep], store=None)
    result = agent.run_sync("go")
    assert "nested deeper than 32 levels" in render_result_html(result)
    assert "nested deeper than 32 levels" in result.rounds[0].results[0].content


KERNEL_CELL = '''
%load_ext nbagent
import nbagent
from nbagent.testing import ScriptedModel, reply, call

@nbagent.tool
def deep():
    """A list nested 100,000 deep."""
    top = inner = []
    for _ in range(100_000):
        inner.append([])
        inner = inner[0]
    return top

def script(request):
    if request.round_index == 0:
        return reply("", [call("deep")])
    return "survived"

deep_model = ScriptedModel(script)
%agent model deep_model
'''


@pytest.mark.kernel
def test_a_deep_value_in_a_real_kernel_reaches_a_final_display(tmp_path: Path):
    kernel = Kernel(kernel_environment(tmp_path / "nbagent-home"), tmp_path)
    try:
        kernel.run(KERNEL_CELL)
        reply_msg, messages = kernel.execute("%%agent\ngo deep", timeout=120)
        errors = [m["content"] for m in messages if m["msg_type"] == "error"]
        assert reply_msg["content"]["status"] == "ok", errors
        html = last_html(messages)
        assert "survived" in html and "Starting" not in html, html[-2000:]
        assert "nested deeper than 32 levels" in html
        assert kernel.run("print(_agent.output)") == "survived\n"
        # and the kernel still works for the next cell
        assert kernel.run("print(1 + 1)") == "2\n"
    finally:
        kernel.close()


def test_a_dataframe_holding_hostile_cells_renders_bounded():
    pd = pytest.importorskip("pandas")

    @tool(register=False)
    def table() -> Any:
        """A table whose cells are hostile."""
        return pd.DataFrame(
            {
                "deep": [nested_list(100_000), [1, 2]],
                "odd": [Unprintable(), "fine"],
                "text": ["abc\u202edef\x1b[31m", "plain"],
            }
        )

    agent = scripted_agent([reply(calls=[call("table")]), "done"], tools=[table], store=None)
    result = agent.run_sync("go")
    assert result.output == "done" and result.rounds[0].results[0].ok
    html = render_result_html(result)
    assert "nested deeper than 32 levels" in html and "str failed" in html
    assert "\u202e" not in html and "\x1b" not in html
    assert "nested deeper than 32 levels" in result.rounds[0].results[0].content
