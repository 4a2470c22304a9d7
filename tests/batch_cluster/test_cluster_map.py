"""Agent.map with executor="ray" / "dask": the same frame as on one machine."""

from __future__ import annotations

import pandas as pd

from tests.support.agents import http_agent
from tests.support.scripted import Answer


def echo(prompt: str, body: dict) -> Answer:
    return Answer(f"done {prompt}")


def test_smoke(engine, counting, tmp_path):
    server = counting(echo)
    agent = http_agent("openai:gpt-test", server, tools=[], store=tmp_path / "h.db")
    out = agent.map(pd.DataFrame({"n": range(6)}), "row {n}", executor=engine, progress=False)
    assert out["error"].isna().all()
