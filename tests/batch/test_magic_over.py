"""``%%agent --over`` in a real IPython shell: the frame lands in the namespace; short errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from IPython.core.error import UsageError

import nbagent
from nbagent.testing import ScriptedModel


@pytest.fixture
def shell(tmp_path) -> Iterator[Any]:
    from IPython.core.displaypub import CapturingDisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell

    InteractiveShell.clear_instance()
    sh = InteractiveShell.instance()
    sh.display_pub = CapturingDisplayPublisher()
    sh.run_line_magic("load_ext", "nbagent")
    model = ScriptedModel(
        lambda r: "seen " + [m for m in r.messages if m.role == "user"][0].content
    )
    nbagent.magic.use(nbagent.Agent(model, tools=[], store=tmp_path / "h.db"), shell=sh)
    sh.user_ns["tickets"] = pd.DataFrame({"subject": ["a", "b"]}, index=["x", "y"])
    sh.user_ns["tone"] = "politely"
    yield sh
    InteractiveShell.clear_instance()


def test_over_fills_columns_from_rows_and_other_fields_from_the_notebook(shell):
    shell.run_cell_magic("agent", "--over tickets --into seen", "Answer {tone}: {subject}")
    frame = shell.user_ns["seen"]
    assert list(frame.index) == ["x", "y"]
    assert list(frame["output"]) == ["seen Answer politely: a", "seen Answer politely: b"]
    summary = shell.display_pub.outputs[-1]["data"]
    assert "2 of 2 rows done" in summary["text/plain"] and "seen" in summary["text/html"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--over nothing", "no DataFrame of that name"),
        ("--over tickets --into 1bad", "not a valid variable name"),
        ("--over tickets --new", "no --tools, --new or --kernel"),
        ("--over tickets --concurrency 0", "concurrency must be at least 1"),
    ],
)
def test_bad_over_options_are_short_usage_errors(shell, line, message):
    with pytest.raises(UsageError, match=message):
        shell.run_cell_magic("agent", line, "Answer: {subject}")
