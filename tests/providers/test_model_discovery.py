"""An agent without a model finds what the user already runs: keys, a local Ollama, a
compatible server, then the embedded model; the footer and ``%agent model`` say why.

The servers are real loopback servers on ephemeral ports speaking Ollama's
``/api/tags`` and the OpenAI ``/v1/models`` list; ``env=`` points the probe at them
(``OLLAMA_HOST``, ``NBAGENT_COMPATIBLE_SERVERS``), so no test touches the usual ports.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nbagent import Agent
from nbagent.errors import ConfigError
from nbagent.providers import choose_model, resolve_model
from nbagent.providers.discovery import forget_local_servers
from nbagent.render import footer_text
from tests.support.html import assert_inert
from tests.support.kernel import Kernel, kernel_environment, last_html
from tests.support.scripted import Answer, ScriptedReplies
from tests.support.servers import RecordedRequest, Reply, WireServer

OLLAMA_TAGS = {
    "models": [
        {"name": "nomic-embed-text:latest", "modified_at": "2026-11-01T10:00:00Z"},
        {"name": "qwen3:4b", "modified_at": "2026-10-01T10:00:00Z"},
        {"name": "llama3.2:latest", "modified_at": "2026-10-20T10:00:00Z"},
    ]
}
"""An ``/api/tags`` reply: an embedding model (newest, not a chat model) and two chat models."""

OPENAI_MODELS = {
    "object": "list",
    "data": [
        {"id": "text-embedding-nomic-embed-text-v1.5", "object": "model"},
        {"id": "qwen2.5-7b-instruct", "object": "model"},
    ],
}
"""A ``/v1/models`` reply as LM Studio sends it (every downloaded model, embeddings too)."""

PATIENT = "5000"
"""A probe budget (ms) no loaded test machine misses; the default is 50 ms."""


def answer_hello(body: dict[str, Any]) -> Answer:
    return Answer("Hello from the local server.")


class ModelServer(WireServer):
    """A loopback server listing ``models`` at ``list_path`` and chatting like a model."""

    def __init__(self, list_path: str, models: Any, *, delay: float = 0.0) -> None:
        chat = ScriptedReplies(answer_hello)

        def respond(request: RecordedRequest) -> Reply:
            if request.method == "GET" and request.path == list_path:
                return Reply(
                    200, models, {"content-type": "application/json"}, first_byte_delay=delay
                )
            return chat(request)

        super().__init__(responder=respond)

    def listings(self) -> int:
        return sum(1 for r in self.requests if r.method == "GET")


@pytest.fixture(autouse=True)
def _no_cached_probe() -> Iterator[None]:
    forget_local_servers()  # each test probes its own servers afresh
    yield
    forget_local_servers()


@pytest.fixture
def dead_url() -> str:
    """A loopback address nothing listens on (the port was just released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def ollama() -> Iterator[ModelServer]:
    server = ModelServer("/api/tags", OLLAMA_TAGS)
    yield server
    server.close()


@pytest.fixture
def compatible() -> Iterator[ModelServer]:
    server = ModelServer("/v1/models", OPENAI_MODELS)
    yield server
    server.close()


def probe_env(ollama_url: str, *compatible_urls: str, budget: str = PATIENT) -> dict[str, str]:
    return {
        "OLLAMA_HOST": ollama_url,
        "NBAGENT_COMPATIBLE_SERVERS": ",".join(u + "/v1" for u in compatible_urls),
        "NBAGENT_DISCOVER": budget,
    }


def _local_installed() -> bool:
    from nbagent.providers.local import installed

    return installed()


def test_a_local_ollama_is_found_and_answers(ollama: ModelServer, dead_url: str) -> None:
    env = probe_env(ollama.url, dead_url)
    choice = choose_model(None, env)
    assert choice.model == "ollama:llama3.2"  # newest chat model; the embedding one is skipped
    assert choice.reason == f"found a local Ollama at 127.0.0.1:{ollama.port}"
    # The probe listed models and sent no prompt.
    assert [(r.method, r.path) for r in ollama.requests] == [("GET", "/api/tags")]

    agent = Agent(env=env, store=None)
    result = agent.run_sync("Hi")
    assert result.output == "Hello from the local server."
    chat = ollama.requests[-1]
    assert (chat.path, chat.json()["model"]) == ("/api/chat", "llama3.2")
    assert footer_text(result).startswith(
        f"ollama:llama3.2 (found a local Ollama at 127.0.0.1:{ollama.port}) · 0 rounds"
    )
    assert result.model == "ollama:llama3.2"  # history keeps the plain model string


def test_a_compatible_server_is_found_when_no_ollama_runs(
    compatible: ModelServer, dead_url: str
) -> None:
    env = probe_env(dead_url, dead_url, compatible.url)
    agent = Agent(env=env, store=None)
    assert agent.model == "openai:qwen2.5-7b-instruct"
    assert agent.model_reason == f"found an OpenAI-compatible server at 127.0.0.1:{compatible.port}"
    result = agent.run_sync("Hi")
    assert result.output == "Hello from the local server."
    chat = compatible.requests[-1]
    assert chat.path == "/v1/chat/completions"
    assert chat.json()["model"] == "qwen2.5-7b-instruct"
    assert "authorization" not in chat.headers  # a local server gets no key


def test_ollama_is_preferred_when_both_answer(ollama: ModelServer, compatible: ModelServer) -> None:
    assert resolve_model(None, probe_env(ollama.url, compatible.url)) == "ollama:llama3.2"


def test_a_slow_server_is_given_up_for_one_that_answers(
    compatible: ModelServer, dead_url: str
) -> None:
    slow = ModelServer("/api/tags", OLLAMA_TAGS, delay=30)
    try:
        env = probe_env(slow.url, compatible.url, budget="1000")
        assert resolve_model(None, env) == "openai:qwen2.5-7b-instruct"
    finally:
        slow.close()


def test_a_key_or_nbagent_model_comes_before_any_probe(ollama: ModelServer) -> None:
    env = {**probe_env(ollama.url), "ANTHROPIC_API_KEY": "k"}
    choice = choose_model(None, env)
    assert (choice.model, choice.reason) == (
        "anthropic:claude-haiku-4-5",
        "ANTHROPIC_API_KEY is set",
    )
    env["NBAGENT_MODEL"] = "gemini:gemini-2.5-flash"
    choice = choose_model(None, env)
    assert (choice.model, choice.reason) == ("gemini:gemini-2.5-flash", "NBAGENT_MODEL is set")
    assert choose_model("openai:gpt-4o", env).reason is None  # a named model needs no reason
    assert ollama.count == 0  # never probed


def test_the_probe_is_cached_for_the_process(ollama: ModelServer, dead_url: str) -> None:
    env = probe_env(ollama.url, dead_url)
    assert Agent(env=env, store=None).model == "ollama:llama3.2"
    assert Agent(env=env, store=None).model == "ollama:llama3.2"
    assert ollama.listings() == 1
    forget_local_servers()
    assert resolve_model(None, env) == "ollama:llama3.2"
    assert ollama.listings() == 2


def test_nothing_found_falls_back_to_the_embedded_model(dead_url: str) -> None:
    env = probe_env(dead_url, dead_url)
    if _local_installed():
        choice = choose_model(None, env)
        assert (choice.model, choice.reason) == (
            "local",
            "no key set and no local model server found",
        )
    else:
        with pytest.raises(ConfigError, match="No model configured"):
            choose_model(None, env)


def test_servers_that_list_no_chat_model_or_are_not_model_servers_are_skipped(
    dead_url: str,
) -> None:
    only_embeddings = ModelServer("/api/tags", {"models": [{"name": "all-minilm:latest"}]})
    web_page = ModelServer("/v1/models", "<html>not a model server</html>")
    try:
        env = probe_env(only_embeddings.url, web_page.url)
        if _local_installed():
            assert resolve_model(None, env) == "local"
        else:
            with pytest.raises(ConfigError, match="No model configured"):
                resolve_model(None, env)
        assert (only_embeddings.listings(), web_page.listings()) == (1, 1)
    finally:
        only_embeddings.close()
        web_page.close()


def test_discovery_off_probes_nothing(ollama: ModelServer) -> None:
    env = probe_env(ollama.url, budget="off")
    if _local_installed():
        assert resolve_model(None, env) == "local"
    else:
        with pytest.raises(ConfigError):
            resolve_model(None, env)
    assert ollama.count == 0
    with pytest.raises(
        ConfigError, match="NBAGENT_DISCOVER='soon': expected 'off' or milliseconds"
    ):
        resolve_model(None, probe_env(ollama.url, budget="soon"))


def test_naming_a_model_later_drops_the_reason(ollama: ModelServer, dead_url: str) -> None:
    agent = Agent(env=probe_env(ollama.url, dead_url), store=None)
    assert agent.model_reason is not None
    agent.use_model("ollama:qwen3:4b")
    assert agent.model_reason is None
    result = agent.run_sync("Hi")
    assert footer_text(result).startswith("ollama:qwen3:4b · 0 rounds")


def test_a_kernel_says_which_model_it_found_and_why(ollama: ModelServer, tmp_path: Path) -> None:
    env = kernel_environment(
        tmp_path / "home",
        OLLAMA_HOST=ollama.url,
        NBAGENT_COMPATIBLE_SERVERS="",
        NBAGENT_DISCOVER=PATIENT,
    )
    kernel = Kernel(env, tmp_path)
    try:
        why = f"found a local Ollama at 127.0.0.1:{ollama.port}"
        assert kernel.run("%load_ext nbagent\n%agent model") == f"model: ollama:llama3.2 ({why})\n"
        reply, messages = kernel.execute("%%agent\nHi")
        assert reply["content"]["status"] == "ok"
        facts = assert_inert(last_html(messages))
        assert "Hello from the local server." in facts.text
        assert f"ollama:llama3.2 ({why}) · 0 rounds" in facts.text
    finally:
        kernel.close()
