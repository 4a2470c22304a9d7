"""Typed columns from each wire format's structured output, over loopback HTTP."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest
from pydantic import BaseModel

from tests.support.agents import http_agent
from tests.support.servers import Anthropic, Gemini, Ollama, RecordedRequest, Reply, WireServer


class Size(BaseModel):
    word: str
    letters: int


def prompt_of(body: dict[str, Any]) -> str:
    if "contents" in body:  # Gemini
        return body["contents"][0]["parts"][0]["text"]
    content = body["messages"][0]["content"]
    if isinstance(content, list):  # Anthropic content blocks
        return "".join(block.get("text", "") for block in content)
    return content


def answer(body: dict[str, Any]) -> str:
    word = prompt_of(body).split()[-1]
    return json.dumps({"word": word, "letters": len(word)})


REPLIES = {
    "anthropic:claude-test": lambda body: Anthropic.stream(
        "", [("toolu_1", "final_answer", answer(body))]
    ),
    "gemini:gemini-test": lambda body: Gemini.text_stream(answer(body)),
    "ollama:qwen3": lambda body: Reply.ndjson([*Ollama.text_chunks(answer(body)), Ollama.done()]),
    "openai:gpt-test": None,  # covered in test_map_frame with the full column check
}


@pytest.mark.parametrize("model", [m for m, r in REPLIES.items() if r is not None])
def test_each_format_fills_one_column_per_field(model, tmp_path):
    build = REPLIES[model]

    def respond(request: RecordedRequest) -> Reply:
        return build(request.json())

    server = WireServer(responder=respond)
    try:
        agent = http_agent(model, server, tools=[], store=tmp_path / "h.db")
        rows = pd.DataFrame({"w": ["pear", "apple", "fig"]}, index=[7, 8, 9])
        out = agent.map(rows, "Measure the word {w}", output_type=Size, progress=False)
    finally:
        server.close()
    assert out["error"].isna().all(), out["error"].tolist()
    assert list(out.index) == [7, 8, 9]
    assert list(out["word"]) == ["pear", "apple", "fig"]
    assert list(out["letters"]) == [4, 5, 3] and out["letters"].dtype.kind == "i"
    assert server.count == 3
