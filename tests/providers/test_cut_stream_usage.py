"""A run stopped while text streams counts the tokens it used, marked as an estimate.

The usage report of an OpenAI-style stream comes last, so a run cancelled mid-stream
(``agent.cancel()``, the Stop button, a timeout) never sees it. Over a real loopback
server streaming slowly, each way of stopping leaves: a RunResult whose usage is an
estimate (input from the request, output from the streamed text), a footer and a
panel that say so, and a history row that still says so after reopening the file.
"""

from __future__ import annotations

import asyncio
import html
import threading
from pathlib import Path

from nbagent import Agent
from nbagent.events import TextDelta
from nbagent.results import RunResult
from nbagent.store import Store
from tests.support.agents import http_agent
from tests.support.history import query
from tests.support.servers import OpenAI, WireServer

WORDS = "word " * 400
"""2,000 bytes: at 5 bytes a chunk every 20 ms, the stream lasts 8 s unless stopped."""

CUT_NOTE = "tokens estimated: the stream stopped before the server reported usage"


def slow_text(server: WireServer) -> None:
    reply = OpenAI.text_stream(WORDS, piece=5)
    reply.chunk_delay = 0.02
    server.add(reply)


def streamed_part(result: RunResult) -> str:
    """The text that arrived before the stop (the answer minus its stop note)."""
    return result.text.split("\n\n[run")[0]


def assert_estimated(result: RunResult, history_db: Path, agent: Agent) -> None:
    """The usage, footer, panel and reopened history all give a marked estimate."""
    usage = result.usage
    streamed = streamed_part(result)
    assert streamed.startswith("word word")
    assert usage.estimated
    assert usage.output_tokens == -(-len(streamed.encode()) // 3)  # bytes / 3, rounded up
    assert usage.input_tokens > 0  # the request was read in full before text came
    assert CUT_NOTE in result.notes
    bundle = result.mime_bundle()
    words = f"~{usage.total_tokens:,} tokens (~{usage.input_tokens:,} in"
    assert words in bundle["text/plain"]
    assert "0 tokens (0 in, 0 out)" not in bundle["text/plain"]
    assert html.escape(words) in bundle["text/html"] or words in bundle["text/html"]
    assert "estimated" in bundle["text/html"]
    rows = query(
        history_db,
        "SELECT input_tokens, output_tokens, usage_estimated FROM messages"
        " WHERE role = 'assistant'",
    )
    assert rows == [(usage.input_tokens, usage.output_tokens, 1)]
    reopened = Store(history_db).load(agent.conversation.id).messages[-1].usage
    assert reopened is not None and reopened.estimated
    assert (reopened.input_tokens, reopened.output_tokens) == (
        usage.input_tokens,
        usage.output_tokens,
    )


def test_agent_cancel_mid_stream_estimates_usage(wire_server: WireServer, history_db: Path) -> None:
    slow_text(wire_server)
    agent = http_agent("openai:gpt-test", wire_server)
    pause = threading.Event()  # never set: its wait is a sleep

    def stop_after_some_text() -> None:
        # Once the request is in, let a few chunks stream, then stop from another thread.
        while wire_server.count == 0:
            pause.wait(0.01)
        pause.wait(0.3)
        agent.cancel()

    stopper = threading.Thread(target=stop_after_some_text)
    stopper.start()
    result = agent.run_sync("Tell me a long story")
    stopper.join()
    assert result.stop_reason == "cancelled"
    assert_estimated(result, history_db, agent)


async def test_stop_button_mid_stream_estimates_usage(
    wire_server: WireServer, history_db: Path
) -> None:
    # The panel's Stop button and a KeyboardInterrupt in a cell end the stream's reader.
    slow_text(wire_server)
    agent = http_agent("openai:gpt-test", wire_server)
    deltas = 0
    stream = agent.stream("Tell me a long story")
    async for event in stream:
        if isinstance(event, TextDelta):
            deltas += 1
            if deltas == 10:
                break
    await stream.aclose()  # type: ignore[attr-defined]
    await asyncio.sleep(0)
    result = agent.last_result
    assert result is not None and result.stop_reason == "cancelled"
    assert_estimated(result, history_db, agent)


def test_timeout_mid_stream_estimates_usage(wire_server: WireServer, history_db: Path) -> None:
    slow_text(wire_server)
    agent = http_agent("openai:gpt-test", wire_server, timeout=0.5)
    result = agent.run_sync("Tell me a long story")
    assert result.stop_reason == "timeout"
    assert_estimated(result, history_db, agent)


def test_a_complete_stream_keeps_the_servers_counts(
    wire_server: WireServer, history_db: Path
) -> None:
    wire_server.add(OpenAI.text_stream("A short answer."))
    agent = http_agent("openai:gpt-test", wire_server)
    result = agent.run_sync("Hi")
    assert result.stop_reason == "complete"
    assert not result.usage.estimated and CUT_NOTE not in result.notes
    assert "~" not in result.mime_bundle()["text/plain"].split(" · ")[2]
    assert query(history_db, "SELECT usage_estimated FROM messages WHERE role = 'assistant'") == [
        (0,)
    ]
