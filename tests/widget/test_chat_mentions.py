"""@name mentions and "Explain last error", with a real InteractiveShell's namespace.

A mentioned variable is sent as a {name} field is; the message shows it as a chip;
suggestions list the kernel's variables (by type, no user code run) and the tools.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from nbagent import Agent, tool
from nbagent.chat import ChatWidget
from nbagent.testing import ScriptedModel, call, reply


class Loud:
    """A value whose repr and len must not run while suggesting."""

    calls: list[str] = []

    def __repr__(self) -> str:
        Loud.calls.append("repr")
        return "loud"

    def __len__(self) -> int:
        Loud.calls.append("len")
        return 1

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # noqa: N802 - what isinstance() asks a proxy for
        Loud.calls.append("__class__")
        return Loud


@tool(register=False)
def lookup_city(name: str) -> str:
    """Looks a city up."""
    return name


@pytest.fixture
def shell() -> Iterator[Any]:
    from IPython.core.interactiveshell import InteractiveShell

    InteractiveShell.clear_instance()
    sh = InteractiveShell.instance()
    sh.user_ns["sales"] = pd.DataFrame({"region": ["n", "s"] * 25, "revenue": range(50)})
    sh.user_ns["sales_loud"] = Loud()
    sh.user_ns["_private"] = 1
    sh.user_ns["lookup_city"] = lookup_city  # defined in the notebook: offered as the tool
    yield sh
    InteractiveShell.clear_instance()


async def test_a_mentioned_variable_is_sent_like_a_field_and_shown_as_a_chip(shell: Any) -> None:
    model = ScriptedModel(lambda r: "ok")
    chat = ChatWidget(Agent(model, tools=[], store=None))
    await asyncio.wait_for(chat.submit("Summarise @sales please, mail me@example.org"), 10)
    sent = model.requests[0].prompt
    assert sent.startswith("Summarise <DataFrame with 50 rows × 2 columns; first 5 rows:>")
    assert "me@example.org" in sent  # an address is not a mention
    html = chat.turns[0]["html"]
    assert '<span class="nbagent-chip">@sales</span>' in html
    assert "Sent to the model: sales as the first 5 of 50 rows" in html


async def test_an_unknown_mention_stays_text(shell: Any) -> None:
    model = ScriptedModel(lambda r: "ok")
    chat = ChatWidget(Agent(model, tools=[], store=None))
    await asyncio.wait_for(chat.submit("ask @nobody"), 10)
    assert model.requests[0].prompt == "ask @nobody"


def test_suggestions_list_variables_by_type_and_tools_without_running_user_code(
    shell: Any,
) -> None:
    chat = ChatWidget(Agent(ScriptedModel(), tools=[lookup_city], store=None))
    Loud.calls.clear()
    chat._handle_custom_msg({"kind": "complete", "prefix": "sa"}, [])  # typed "@sa"
    assert chat.suggestions == [
        {"name": "sales", "kind": "variable", "detail": "DataFrame"},
        {"name": "sales_loud", "kind": "variable", "detail": "Loud"},
    ]
    assert Loud.calls == []
    assert chat.complete("look") == [{"name": "lookup_city", "kind": "tool", "detail": "tool"}]
    assert chat.complete("_") == []  # private names are not offered


async def test_explain_last_error_sends_the_kernel_error(shell: Any) -> None:
    shell.run_cell("1 / 0")
    model = ScriptedModel(lambda r: "Division by zero.")
    chat = ChatWidget(Agent(model, tools=[], store=None))
    chat._handle_custom_msg({"kind": "explain_error"}, [])  # the button
    assert chat.task is not None
    await asyncio.wait_for(chat.task, 10)
    sent = model.requests[0].prompt
    assert sent.startswith("Explain the last error and how to fix it:")
    assert "ZeroDivisionError" in sent and "{Err}" not in sent


def png(width: int, height: int) -> bytes:
    import io

    from PIL import Image as PILImage

    out = io.BytesIO()
    PILImage.new("RGB", (width, height), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


async def test_a_pasted_image_goes_with_the_next_message_and_is_stored(tmp_path: Any) -> None:
    from nbagent.store import Store

    model = ScriptedModel(lambda r: "A red square.")
    chat = ChatWidget(Agent(model, tools=[], store=tmp_path / "h.db"))
    chat._handle_custom_msg({"kind": "attach_image"}, [png(64, 48)])  # the page's paste
    (chip,) = chat.attachments
    assert chip["label"] == "PNG 64×48" and chip["thumb"].startswith("data:image/png;base64,")
    chat._handle_custom_msg({"kind": "attach_image"}, [b"GIF89a not a png"])
    assert chat.status.startswith("image not attached:") and len(chat.attachments) == 1
    await asyncio.wait_for(chat.submit("What is this?"), 10)
    sent = model.requests[0].request.messages[0]  # the user message as sent, images included
    assert [(i.width, i.height, i.media_type) for i in sent.images] == [(64, 48, "image/png")]
    assert chat.attachments == []  # sent, so no longer waiting
    assert "Attached: PNG 64×48" in chat.turns[0]["html"]
    # Stored with the conversation, as prompt images are.
    user = Store(tmp_path / "h.db").load(chat.conversation_id).messages[0]
    assert [(i.width, i.height) for i in user.images] == [(64, 48)]
    again = ChatWidget.resume(store=tmp_path / "h.db", model=ScriptedModel())
    assert "Attached: PNG 64×48" in user_part(again.turns[0])  # reopened as it was shown


def test_an_image_over_the_cap_is_refused_with_the_reason() -> None:
    from nbagent.chat.inputs import MAX_IMAGE_BYTES

    chat = ChatWidget(Agent(ScriptedModel(), tools=[], store=None))
    with pytest.raises(ValueError, match="is over"):
        chat.attach_image(b"\x89PNG" + b"0" * MAX_IMAGE_BYTES)
    assert chat.attachments == []
    chat.attach_image(png(8, 8))
    chat._handle_custom_msg({"kind": "remove_attachment", "index": 0}, [])  # its ×
    assert chat.attachments == []


async def test_put_a_dataframe_result_in_a_variable(shell: Any) -> None:
    @tool(register=False)
    def top_regions() -> pd.DataFrame:
        """The best regions."""
        return pd.DataFrame({"region": ["n", "s"], "revenue": [3, 2]})

    model = ScriptedModel(
        lambda r: "Here." if r.tool_results else reply(calls=[call("top_regions")])
    )
    chat = ChatWidget(Agent(model, tools=[top_regions], store=None))
    await asyncio.wait_for(chat.submit("best regions?"), 10)
    html = chat.turns[0]["html"]
    (call_id,) = re.findall(r'class="nbagent-button nbagent-card-put" data-call-id="([^"]+)"', html)
    chat._handle_custom_msg({"kind": "put_variable", "id": call_id, "name": "best"}, [])
    assert list(shell.user_ns["best"]["revenue"]) == [3, 2]
    chat._handle_custom_msg({"kind": "put_variable", "id": call_id, "name": "not ok"}, [])
    assert chat.status == "'not ok' is not a valid variable name"
    with pytest.raises(ValueError, match="no call nope"):
        chat.put_in_variable("nope", "x")


def user_part(turn: dict[str, Any]) -> str:
    """The user's message of a drawn turn, with the notes under it (before the answer)."""
    html = str(turn["html"])
    end = html.find('<div class="nbagent-cards">')
    return html[: end if end >= 0 else html.find("<style>")]


async def test_a_redrawn_message_shows_the_mention_as_typed_not_as_sent(
    shell: Any, tmp_path: Any
) -> None:
    path = tmp_path / "h.db"
    chip = '<span class="nbagent-chip">@sales</span>'
    note = "Sent to the model: sales as the first 5 of 50 rows"
    chat = ChatWidget(Agent(ScriptedModel(lambda r: "ok"), tools=[], store=path))
    await asyncio.wait_for(chat.submit("Summarise @sales please"), 10)
    await asyncio.wait_for(chat.submit("Now @sales by region"), 10)
    await asyncio.wait_for(chat.edit(1, "Instead plot @sales"), 10)  # a branch at turn 2
    # Drawn from the history (the branch's copy of turn 1 too), as typed, with the chip.
    assert [t["prompt"] for t in chat.turns] == ["Summarise @sales please", "Instead plot @sales"]
    for turn in chat.turns:
        assert chip in user_part(turn) and note in user_part(turn)
        assert "DataFrame with 50 rows" not in user_part(turn)
    chat.switch_branch(1)  # back to the original branch, redrawn from the history
    assert [t["prompt"] for t in chat.turns] == ["Summarise @sales please", "Now @sales by region"]
    assert all(chip in user_part(t) for t in chat.turns)

    # After a restart: a new widget on the same file shows what was typed...
    model = ScriptedModel(lambda r: "more")
    again = ChatWidget.resume(store=path, model=model, tools=[])
    assert [t["prompt"] for t in again.turns] == ["Summarise @sales please", "Now @sales by region"]
    assert [user_part(t) for t in again.turns] == [user_part(t) for t in chat.turns]
    again.switch_branch(1)
    assert [t["prompt"] for t in again.turns] == ["Summarise @sales please", "Instead plot @sales"]
    assert all(chip in user_part(t) and note in user_part(t) for t in again.turns)
    # ...while the model still gets what was sent: the variable described, not "@sales".
    await asyncio.wait_for(again.submit("Thanks"), 10)
    sent = [m.content for m in model.requests[0].messages if m.role == "user"]
    assert sent[0].startswith("Summarise <DataFrame with 50 rows × 2 columns; first 5 rows:>")
    assert sent[1].startswith("Instead plot <DataFrame with 50 rows") and sent[2] == "Thanks"
    assert not any("@sales" in text for text in sent)


def test_a_file_from_before_typed_messages_were_kept_shows_the_sent_text(tmp_path: Any) -> None:
    from tests.store.test_migrations import make_version_1

    path = tmp_path / "old.db"
    make_version_1(path)  # a version 1 file: no user_view column, one finished turn
    chat = ChatWidget(conversation="c_old", store=path, model=ScriptedModel())
    (turn,) = chat.turns
    assert turn["prompt"] == "Weather in Paris?" and "Weather in Paris?" in user_part(turn)
