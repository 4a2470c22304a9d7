"""A whole batch recorded once replays with no server and no key, rows in any order."""

from __future__ import annotations

import pandas as pd

from nbagent import Agent
from nbagent.tools import tool
from tests.support.agents import http_agent
from tests.support.scripted import Answer


@tool(register=False)
def double(x: int) -> int:
    """Twice x."""
    return 2 * x


def script(prompt: str, body: dict) -> Answer:
    if body["messages"][-1]["role"] == "user":
        return Answer("", [("double", {"x": int(prompt.split()[-1])})])
    return Answer(f"twice is {body['messages'][-1]['content']}")


def test_a_recorded_batch_replays_the_same_frame(counting, tmp_path):
    rows = pd.DataFrame({"n": list(range(16))})
    recording = tmp_path / "batch.jsonl"
    server = counting(script, delay=0.005)
    live = http_agent(
        "openai:gpt-test", server, tools=[double], store=tmp_path / "a.db", record=recording
    )
    recorded = live.map(rows, "Double {n}", concurrency=8, progress=False)
    assert recorded["error"].isna().all() and server.count == 32
    server.close()  # nothing to answer from now on

    replayed_agent = Agent(
        "openai:gpt-test",
        base_url="http://127.0.0.1:9/v1",
        env={},
        tools=[double],
        store=tmp_path / "b.db",
        replay=recording,
    )
    replayed = replayed_agent.map(rows, "Double {n}", concurrency=8, progress=False)
    assert list(replayed["output"]) == [f"twice is {2 * n}" for n in range(16)]
    pd.testing.assert_frame_equal(
        recorded.drop(columns="seconds"), replayed.drop(columns="seconds")
    )
