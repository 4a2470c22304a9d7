"""Core values: JSON round trip and Markdown export of a real run's conversation."""

from __future__ import annotations

import json

import pandas as pd

from nbagent import Agent, Conversation, Message, ToolCall, ToolResult, ToolRound, Usage, tool
from nbagent.testing import ScriptedModel, call, raw_call, reply

from .helpers import assert_history_valid


def test_conversation_json_round_trip_of_a_real_run():
    @tool
    def table(n: int) -> pd.DataFrame:
        """A table."""
        return pd.DataFrame({"x": range(n)})

    def script(request):
        if request.round_index == 0:
            return reply("Fetching «data».", [call("table", n=3), raw_call("table", "{'n': 2,}")])
        if request.round_index == 1:
            return reply(calls=[call("missing")])
        return reply("Ünïcode answer ✓")

    agent = Agent(ScriptedModel(script), tools=[table], system="sys prompt")
    agent.run_sync("first")
    agent.run_sync("second")
    conv = agent.conversation
    text = conv.to_json()
    again = Conversation.from_json(text)
    assert again.to_dict() == conv.to_dict()
    assert again.to_json() == text
    assert again.system == "sys prompt" and again.id == conv.id
    assert "Ünïcode answer ✓" in text  # kept readable, not \u-escaped
    first = again.messages[1]
    assert first.rounds is not None and len(first.rounds) == 2
    assert first.rounds[0].assistant_text == "Fetching «data»."
    assert first.rounds[0].calls[1].raw_arguments == "{'n': 2,}"
    assert first.rounds[0].results[0].content.startswith("DataFrame shape=(3, 1)")
    assert first.rounds[0].results[0].value is None  # live values are not serialised
    assert not first.rounds[1].results[0].ok
    assert first.usage is not None and first.usage.total_tokens > 0
    assert first.stop_reason == "complete" and first.model == "scripted"
    assert_history_valid(again)
    # A restored conversation continues: the model receives the old rounds.
    model = ScriptedModel(lambda r: f"{len(r.messages)} messages")
    resumed = Agent(model)
    resumed.conversation = again
    assert resumed.run_sync("third").output == "6 messages"
    assert model.requests[0].messages[1].rounds[0].calls[0].arguments == {"n": 3}


def test_message_dict_shapes_are_plain_json():
    msg = Message(
        "assistant",
        "answer",
        rounds=[
            ToolRound(
                None,
                [ToolCall("c1", "f", {"a": 1}, provider_data={"sig": "x"})],
                [ToolResult("c1", "f", False, "Error: no", "no", 0.5, traceback="tb")],
                Usage(3, 4),
                1.5,
                {"thinking": [1]},
            )
        ],
        usage=Usage(3, 4),
        model="m",
        provider_data={"p": 1},
        stop_reason="complete",
    )
    data = json.loads(json.dumps(msg.to_dict()))
    assert Message.from_dict(data) == msg
    assert data["rounds"][0]["calls"][0]["provider_data"] == {"sig": "x"}
    assert data["rounds"][0]["results"][0]["traceback"] == "tb"
    assert Usage(1, 2) + Usage(3, 4) == Usage(4, 6)


def test_markdown_export_shows_calls_results_and_answers():
    conv = Conversation(id="c_1", system="Be kind.")
    conv.messages += [
        Message("user", "Add 2 and 3"),
        Message(
            "assistant",
            "It is 5.",
            rounds=[
                ToolRound(
                    "Adding.",
                    [ToolCall("a", "add", {"a": 2, "b": 3})],
                    [ToolResult("a", "add", True, "5")],
                )
            ],
        ),
    ]
    assert conv.to_markdown() == "\n".join(
        [
            "# Conversation c_1",
            "",
            "**System:** Be kind.",
            "",
            "## User",
            "",
            "Add 2 and 3",
            "",
            "## Assistant",
            "",
            "### Round 1",
            "",
            "Adding.",
            "",
            '- `add({"a": 2, "b": 3})` -> ok',
            "",
            "  ```",
            "  5",
            "  ```",
            "",
            "It is 5.",
            "",
        ]
    )


def test_markdown_export_keeps_tool_text_inside_its_code():
    # Backticks in a tool name, its arguments or its result must not end the code span or
    # fence early: what follows would become live Markdown (raw HTML, links) in a viewer.
    from markdown_it import MarkdownIt

    payload = "```\n<script>alert(1)</script>\n```"
    conv = Conversation(id="c_1")
    conv.messages += [
        Message("user", "go"),
        Message(
            "assistant",
            "done",
            rounds=[
                ToolRound(
                    None,
                    [ToolCall("a", "odd`name", {"q": "`<img src=x onerror=alert(1)>`"})],
                    [ToolResult("a", "odd`name", True, payload)],
                )
            ],
        ),
    ]
    html = MarkdownIt("commonmark", {"html": True}).render(conv.to_markdown())
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "odd`name" in html
