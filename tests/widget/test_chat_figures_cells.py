"""A figure attached by name, and code from the chat into a cell, with a real InteractiveShell.

A matplotlib Figure is suggested as a figure (its type only: it is not drawn while
the user types), drawn once when picked, and sent with the next message as a PNG
that is stored with the conversation. Where no front end runs notebook commands
(this plain shell), Insert as cell and the model's propose_cell say so in one
sentence and insert nothing.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from typing import Any

import pytest

from nbagent import Agent
from nbagent.chat import ChatWidget
from nbagent.testing import ScriptedModel, call, reply

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from matplotlib.figure import Figure  # noqa: E402

DRAWS: list[str] = []
"""One entry each time the test's figure is drawn (its draw_event)."""


@pytest.fixture
def shell() -> Iterator[Any]:
    from IPython.core.interactiveshell import InteractiveShell

    InteractiveShell.clear_instance()
    sh = InteractiveShell.instance()
    fig = Figure(figsize=(4, 3), dpi=50)
    fig.add_subplot().plot([1, 3, 2])
    fig.canvas.mpl_connect("draw_event", lambda event: DRAWS.append("draw"))
    sh.user_ns["fig_sales"] = fig
    sh.user_ns["fig_note"] = "not a figure"
    yield sh
    InteractiveShell.clear_instance()


async def test_a_figure_picked_by_name_goes_as_a_png_and_is_stored(
    shell: Any, tmp_path: Any
) -> None:
    from nbagent.store import Store

    model = ScriptedModel(lambda r: "A line.")
    chat = ChatWidget(Agent(model, tools=[], store=tmp_path / "h.db"))
    DRAWS.clear()
    chat._handle_custom_msg({"kind": "complete", "prefix": "fig"}, [])  # typed "@fig"
    assert chat.suggestions == [
        {"name": "fig_sales", "kind": "figure", "detail": "Figure"},
        {"name": "fig_note", "kind": "variable", "detail": "str"},
    ]
    assert DRAWS == []  # suggesting draws nothing
    chat._handle_custom_msg({"kind": "attach_figure", "name": "fig_sales"}, [])  # picked
    assert DRAWS == ["draw"]
    (chip,) = chat.attachments
    assert chip["label"] == "fig_sales · PNG 200×150"
    thumb = base64.b64decode(chip["thumb"].removeprefix("data:image/png;base64,"))
    assert thumb.startswith(b"\x89PNG")
    await asyncio.wait_for(chat.submit("What does it show?"), 10)
    sent = model.requests[0].request.messages[0]
    assert [(i.width, i.height, i.media_type) for i in sent.images] == [(200, 150, "image/png")]
    assert sent.images[0].data.startswith(b"\x89PNG")
    assert chat.attachments == []
    user = Store(tmp_path / "h.db").load(chat.conversation_id).messages[0]
    assert [(i.width, i.height) for i in user.images] == [(200, 150)]


def test_a_name_that_is_not_a_figure_is_refused_in_the_status(shell: Any) -> None:
    chat = ChatWidget(Agent(ScriptedModel(), tools=[], store=None))
    chat._handle_custom_msg({"kind": "attach_figure", "name": "fig_note"}, [])
    assert chat.status == "figure not attached: 'fig_note' is not a matplotlib Figure"
    chat._handle_custom_msg({"kind": "attach_figure", "name": "missing"}, [])
    assert chat.status == "figure not attached: 'missing' is not defined in the notebook"
    assert chat.attachments == []


def test_insert_as_cell_without_a_notebook_front_end_says_so(shell: Any) -> None:
    chat = ChatWidget(Agent(ScriptedModel(), tools=[], store=None))
    chat._handle_custom_msg({"kind": "insert_cell", "code": "x = 1"}, [])
    assert chat.status.startswith("Insert as cell needs JupyterLab 4 or Notebook 7")
    assert "copy the code" in chat.status
    assert shell.user_ns.get("x") is None  # nothing ran


async def test_propose_cell_in_a_chat_run_takes_the_chat_path(shell: Any) -> None:
    model = ScriptedModel(
        lambda r: "Done." if r.tool_results else reply(calls=[call("propose_cell", code="y = 2")])
    )
    chat = ChatWidget(Agent(model, kernel=True, store=None))
    await asyncio.wait_for(chat.submit("give me a cell"), 20)
    (result,) = model.requests[1].tool_results
    assert str(result.content).startswith("Not proposed: Insert as cell needs JupyterLab 4")
    assert "y" not in shell.user_ns
