"""The one way tests build an Agent: on a scripted model, or on a loopback server.

    agent = scripted_agent(script, tools=[add])
    agent.run_sync("What is 2 + 3?")
    agent.provider.requests            # what the scripted model received, request by request

    agent = http_agent("openai:gpt-test", server, tools=[add])   # server.url is loopback

History goes where the suite's conftest points ``NBAGENT_HOME``: a temporary folder
of the test's own, never the user's (``store=None`` for none, or ``store=path``; see
``tests/support/history.py`` to read it back). Every other keyword is an Agent option
(``max_rounds=``, ``approver=``, ``system=``...) or, for :func:`http_agent`, a
provider option (``max_retries=``, ``timeout=``...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from nbagent import Agent
from nbagent.testing import Reply, Script, ScriptedModel
from nbagent.tools import Tool

TEST_KEY = "sk-test-0123456789"
"""The key http_agent sends (recognisable in a recorded request, worthless anywhere else)."""

# An API whose documented base URL includes its version path; the others add it per request.
VERSIONED_BASE_PATHS = {"openai": "/v1"}

Tools = Iterable[Tool | Callable[..., Any]]


class LoopbackServer(Protocol):
    """Anything with a ``url`` such as ``http://127.0.0.1:PORT`` (tests/support/servers.py)."""

    url: str


def scripted_agent(
    script: Script | Iterable[Reply | str] | None = None,
    *,
    tools: Tools | None = None,
    chunk_size: int = 8,
    delay: float = 0.0,
    model: str = "",
    **options: Any,
) -> Agent:
    """An Agent on a :class:`~nbagent.testing.ScriptedModel`.

    Args:
        script: ``script(request) -> Reply | str``, a list of replies used in order, or
            None to echo the prompt.
        tools: the agent's tools (functions or ``@tool(register=False)`` tools); None, as
            for Agent, offers every ``@tool`` registered in the process.
        chunk_size: characters per streamed text chunk.
        delay: seconds before each chunk (for live rendering and Stop).
        model: the model name footers show (``scripted:NAME``).
        **options: Agent options.
    """
    scripted = ScriptedModel(script, chunk_size=chunk_size, delay=delay, model=model)
    return Agent(scripted, tools=tools, **options)


def http_agent(
    model: str,
    server: LoopbackServer | str,
    *,
    tools: Tools | None = None,
    api_key: str | None = TEST_KEY,
    **options: Any,
) -> Agent:
    """An Agent on a real adapter (``"openai:NAME"``, ``"anthropic:NAME"``...) talking to
    ``server`` with a test key, reading nothing from the environment.

    Args:
        model: a ``provider:model`` string.
        server: a loopback server (or its URL); OpenAI's ``/v1`` is added for ``openai:``.
        tools: the agent's tools (None: every registered ``@tool``, as for Agent).
        api_key: the key sent, or None to send none.
        **options: Agent options and provider options.
    """
    url = server if isinstance(server, str) else server.url
    prefix = model.partition(":")[0]
    base_url = url.rstrip("/") + VERSIONED_BASE_PATHS.get(prefix, "")
    return Agent(model, base_url=base_url, api_key=api_key, env={}, tools=tools, **options)
