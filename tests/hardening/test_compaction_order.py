"""Compaction drops the right thing (issue 19, item 16), over real loopback HTTP.

With a small context window, the tool result the model just asked for must reach it
whole while older small-talk turns are left out: the current round's results are the
last thing compacted.
"""

from __future__ import annotations

from tests.support.agents import http_agent
from tests.support.servers import OpenAI, WireServer

RESULT = "row " * 500  # 2,000 characters: about 670 tokens


def read_table(name: str) -> str:
    """The rows of a table."""
    return RESULT


def test_the_current_rounds_result_is_compacted_last(wire_server: WireServer) -> None:
    chat = "small talk " * 110  # 1,210 characters a turn
    for _ in range(4):
        wire_server.add(OpenAI.text_stream(chat, piece=400))
    wire_server.add(
        OpenAI.call_stream(("c1", "read_table", '{"name": "sales"}')),
        OpenAI.text_stream("Sales look steady."),
    )
    agent = http_agent("openai:qwen", wire_server, tools=[read_table], context_window=4000,
                       store=None)  # fmt: skip
    for turn in range(4):
        agent.run_sync(f"Chat {turn}: {chat}")
    result = agent.run_sync("Read the sales table")
    assert result.output == "Sales look steady."
    sent = wire_server.bodies()[-1]["messages"]
    tool_message = next(m for m in sent if m["role"] == "tool")
    assert tool_message["content"] == RESULT  # what the model just asked for, whole
    assert not any("Chat 0" in str(m["content"]) for m in sent)  # older turns went first
    assert any(m["content"] == "Read the sales table" for m in sent)
