"""NBAGENT_LOG_RAW (redacted raw responses in dated files) and argument repair, over HTTP."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from nbagent.tools import Tool
from tests.support.agents import TEST_KEY, http_agent
from tests.support.servers import Ollama, OpenAI, Reply, WireServer


def weather(city: str, metric: bool = False) -> str:
    """Weather of a city."""
    return f"18{'C' if metric else 'F'} in {city}"


async def test_raw_responses_are_written_redacted(
    wire_server: WireServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NBAGENT_LOG_RAW", str(tmp_path / "raw"))
    # A server that echoes the key back in its answer: the file must not hold it.
    wire_server.add(OpenAI.call_stream(("call_1", "weather", '{"city": "Oslo"}')),
                    Reply(200, OpenAI.completion(f"Mild. (your key is {TEST_KEY})")))  # fmt: skip
    agent = http_agent("openai:gpt-test", wire_server, tools=[Tool(weather)])
    await agent.run("Weather?")
    files = sorted((tmp_path / "raw").glob("*/*-openai.txt"))
    assert len(files) == 2
    assert files[0].parent.name.count("-") == 2  # a dated folder: YYYY-MM-DD
    first, second = (f.read_text(encoding="utf-8") for f in files)
    assert first.startswith("data: ") and '"weather"' in first and "[DONE]" in first
    assert "Mild." in second and TEST_KEY not in second and "[redacted]" in second


async def test_raw_log_off_by_default_and_for_ollama_too(
    wire_server: WireServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NBAGENT_LOG_RAW", raising=False)
    wire_server.add(Reply.ndjson([*Ollama.text_chunks("Hi."), Ollama.done()]))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    await http_agent("ollama:qwen3", wire_server, api_key=None).run("Hi")
    assert list(cwd.iterdir()) == []
    monkeypatch.setenv("NBAGENT_LOG_RAW", str(tmp_path / "raw"))
    wire_server.add(Reply.ndjson([*Ollama.text_chunks("Hi."), Ollama.done()]))
    await http_agent("ollama:qwen3", wire_server, api_key=None).run("Hi")
    (only,) = (tmp_path / "raw").glob("*/*-ollama.txt")
    assert '"done": true' in only.read_text(encoding="utf-8")


async def test_single_quotes_with_json_literals_are_repaired_and_logged(
    wire_server: WireServer, caplog: pytest.LogCaptureFixture
) -> None:
    wire_server.add(OpenAI.call_stream(("call_1", "weather", "{'city': 'Oslo', 'metric': true}")),
                    OpenAI.text_stream("Mild."))  # fmt: skip
    agent = http_agent("openai:gpt-test", wire_server, tools=[Tool(weather)])
    with caplog.at_level(logging.INFO, logger="nbagent"):
        result = await agent.run("Weather?")
    assert result.rounds[0].results[0].content == "18C in Oslo"
    repairs = [r for r in caplog.records if "arguments repaired" in r.getMessage()]
    assert len(repairs) == 1 and repairs[0].levelno == logging.INFO
    assert "single quotes" in repairs[0].getMessage()
    # The model's own text goes back byte for byte.
    turn = next(m for m in wire_server.bodies()[1]["messages"] if m.get("tool_calls"))
    sent = turn["tool_calls"][0]["function"]["arguments"]
    assert sent == "{'city': 'Oslo', 'metric': true}"
