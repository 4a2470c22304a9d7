"""Seed behaviours at their edges (issue 19, item 19), over real loopback HTTP.

The answer after ``</think>`` starts the same whatever the chunk boundaries;
``Agent(env={"NBAGENT_STRICT": "1"})`` is honoured; invalid tool arguments are
logged at WARNING with the raw arguments redacted.
"""

from __future__ import annotations

import json
import logging

import pytest

from nbagent import Agent, ToolError
from tests.support.agents import TEST_KEY, http_agent
from tests.support.servers import OpenAI, WireServer

THOUGHT = "<think>\nThe user greets me.\n</think>\n\n"
ANSWER = "Hello there."


def test_the_answer_after_think_starts_the_same_at_every_boundary(
    wire_server: WireServer,
) -> None:
    pieces = range(1, len(THOUGHT) + 3)
    for piece in pieces:
        wire_server.add(OpenAI.text_stream(THOUGHT + ANSWER, piece=piece))
    agent = http_agent("openai:qwen3", wire_server, api_key=None, tools=[], store=None)
    answers = {piece: agent.run_sync("Hi").output for piece in pieces}
    assert set(answers.values()) == {ANSWER}, answers


def fails(path: str) -> str:
    """Read a file."""
    raise OSError(f"cannot read {path}")


def test_strict_from_the_agents_env_mapping(wire_server: WireServer) -> None:
    wire_server.add(OpenAI.call_stream(("c1", "fails", '{"path": "a.txt"}')))
    agent = Agent("openai:m", base_url=wire_server.url + "/v1", api_key=TEST_KEY,
                  env={"NBAGENT_STRICT": "1"}, tools=[fails], store=None)  # fmt: skip
    with pytest.raises(ToolError, match="cannot read a.txt"):
        agent.run_sync("Read a.txt")


def test_the_process_environment_is_not_read_when_env_is_given(
    wire_server: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NBAGENT_STRICT", "1")  # the user's environment, not nbagent's code
    wire_server.add(
        OpenAI.call_stream(("c1", "fails", '{"path": "a.txt"}')), OpenAI.text_stream("No file.")
    )
    agent = http_agent("openai:m", wire_server, tools=[fails], store=None)  # env={}
    assert agent.run_sync("Read a.txt").output == "No file."


def count_rows(limit: int) -> str:
    """Count rows up to a limit."""
    return str(limit)


def test_invalid_arguments_are_a_redacted_warning(
    wire_server: WireServer, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "sk-proj-" + "Q7xZ" * 10
    args = json.dumps({"limit": f"all of them, token {secret}"})
    wire_server.add(OpenAI.call_stream(("c1", "count_rows", args)), OpenAI.text_stream("Sorry."))
    agent = http_agent("openai:m", wire_server, tools=[count_rows], store=None)
    with caplog.at_level(logging.INFO, logger="nbagent"):
        result = agent.run_sync("How many rows?")
    assert not result.rounds[0].results[0].ok
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    invalid = [r.getMessage() for r in warnings if "invalid arguments" in r.getMessage()]
    assert invalid and "count_rows" in invalid[0] and "all of them" in invalid[0]
    assert not any(secret[:12] in r.getMessage() for r in caplog.records)
