"""Agent.close()/aclose() really close the provider's connections (the server sees it)."""

from __future__ import annotations

from nbagent import Agent
from tests.support.agents import http_agent
from tests.support.servers import OpenAI, WireServer


def _agent(server: WireServer) -> Agent:
    return http_agent("openai:test-model", server, api_key="k", store=None)


def test_close_from_sync_code_drops_the_connection(wire_server: WireServer) -> None:
    wire_server.add(
        OpenAI.text_stream("One."), OpenAI.text_stream("Two."), OpenAI.text_stream("Three.")
    )
    agent = _agent(wire_server)
    assert agent.run_sync("first").output == "One."
    assert agent.run_sync("second").output == "Two."
    assert wire_server.connections == 1  # keep-alive while open
    agent.close()
    # The agent still works after closing: it opens a fresh connection.
    assert agent.run_sync("third").output == "Three."
    assert wire_server.connections == 2
    agent.close()


async def test_async_context_manager_closes(wire_server: WireServer) -> None:
    wire_server.add(OpenAI.text_stream("One."), OpenAI.text_stream("Two."))
    async with _agent(wire_server) as agent:
        assert (await agent.run("first")).output == "One."
    assert (await agent.run("again")).output == "Two."
    assert wire_server.connections == 2
    await agent.aclose()
