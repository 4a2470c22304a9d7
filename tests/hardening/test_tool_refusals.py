"""Models that refuse tools (issue 19, item 18), over real loopback HTTP.

llama.cpp's server without ``--jinja`` refuses a request with tools (HTTP 500 or 400,
"tools param requires --jinja flag"); OpenRouter answers 404 for a model without
tool support. The run retries once without tools and answers; the agent's next run
sends no tools at all (the refusal is remembered).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.agents import http_agent
from tests.support.servers import OpenAI, Reply, WireServer


def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


LLAMA_CPP = "tools param requires --jinja flag"
OPENROUTER = (
    "No endpoints found that support tool use. To learn more about provider routing, "
    "visit: https://openrouter.ai/docs/provider-routing"
)

REFUSALS = [
    ("llama.cpp 500", Reply(500, {"error": {"code": 500, "message": LLAMA_CPP,
                                            "type": "server_error"}})),
    ("llama.cpp 400", Reply(400, {"error": {"code": 400, "message": LLAMA_CPP,
                                            "type": "invalid_request_error"}})),
    ("openrouter 404", Reply(404, {"error": {"message": OPENROUTER, "code": 404}})),
]  # fmt: skip


@pytest.mark.parametrize(("case", "refusal"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_a_refusal_retries_without_tools_and_is_remembered(
    wire_server: WireServer, case: str, refusal: Reply
) -> None:
    wire_server.add(refusal, OpenAI.text_stream("Sunny, I think."), OpenAI.text_stream("Bye."))
    agent = http_agent("openai:local", wire_server, tools=[lookup], max_retries=0, store=None)
    first = agent.run_sync("Weather in Paris?")
    assert first.stop_reason == "complete" and first.output == "Sunny, I think."
    assert any("does not support tools" in note for note in first.notes)
    second = agent.run_sync("Thanks")
    assert second.output == "Bye."
    bodies: list[dict[str, Any]] = wire_server.bodies()
    assert "tools" in bodies[0] and "tools" not in bodies[1]
    assert "tools" not in bodies[2]  # the next run did not ask again
    assert wire_server.count == 3


def test_another_server_error_is_not_a_refusal(wire_server: WireServer) -> None:
    wire_server.add(Reply(404, {"error": {"message": "model 'local' not found", "code": 404}}))
    agent = http_agent("openai:local", wire_server, tools=[lookup], max_retries=0, store=None)
    with pytest.raises(Exception, match="not found"):
        agent.run_sync("Weather in Paris?")
    assert wire_server.count == 1
