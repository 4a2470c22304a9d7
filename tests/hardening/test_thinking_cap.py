"""Item 14, first half: a 16 MB ``<think>`` block no longer becomes 16 MB of panel HTML.

The panel shows the first 20,000 characters of a turn's thinking and says how much
more there is and where all of it is kept: the run's result and the history, which
store it whole. The answer streams from a real loopback server.
"""

from __future__ import annotations

from nbagent import Agent
from nbagent.render import render_result_html, result_mime_bundle
from tests.support import history
from tests.support.agents import http_agent
from tests.support.servers import OpenAI, WireServer

history_home = history.history_home
SIZE = 16 * 1024 * 1024


def test_a_huge_think_block_is_capped_in_the_panel_and_kept_whole(
    wire_server: WireServer, history_home
):
    thinking = "".join(f"step {i}: hmm. " for i in range(SIZE // 14))[:SIZE]
    wire_server.add(OpenAI.text_stream(f"<think>{thinking}</think>The answer.", piece=65_536))
    agent = http_agent("openai:local-model", wire_server, tools=[])
    result = agent.run_sync("Think hard.")
    assert result.output == "The answer."
    assert result.message.provider_data["thinking"].strip() == thinking.strip()
    page = render_result_html(result)
    assert len(page) < 60_000, f"{len(page):,} characters of panel HTML"
    assert f"Thinking ({len(thinking):,} characters; the first 20,000 shown)" in page
    assert f"[… {len(thinking) - 20_000:,} more characters not shown" in page
    assert "message.provider_data" in page and "Agent.resume(id)" in page
    assert "step 0: hmm." in page and "The answer." in page
    assert all(len(v) < 60_000 for v in result_mime_bundle(result).values())
    # "Show all" from the history: the whole thinking comes back after reopening it.
    again = Agent.resume(result.conversation_id, store=agent.store.path)
    kept = again.conversation.messages[-1].provider_data["thinking"]
    assert kept.strip() == thinking.strip()
