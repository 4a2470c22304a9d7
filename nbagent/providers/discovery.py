"""Finding a model server the user already runs on this machine (no model named, no key).

:func:`find_local_server` asks, in parallel, a local Ollama (``OLLAMA_HOST``, default
``127.0.0.1:11434``) and OpenAI-compatible servers (``NBAGENT_COMPATIBLE_SERVERS``,
default LM Studio's ``127.0.0.1:1234`` and llama.cpp's ``127.0.0.1:8080``) for their
model lists. A probe only lists models (``GET /api/tags``, ``GET /v1/models``): it
never sends a prompt. The whole probe gives up after :data:`PROBE_SECONDS`; its
answer is cached for the process, per set of addresses (:func:`forget_local_servers`
drops it). ``NBAGENT_DISCOVER=off`` looks for nothing; ``NBAGENT_DISCOVER=300`` gives
the probe 300 ms (a busy machine).
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..errors import ConfigError

DISCOVER_VARIABLE = "NBAGENT_DISCOVER"
"""``off``: look for no local server; a number: the probe's time limit in milliseconds."""
SERVERS_VARIABLE = "NBAGENT_COMPATIBLE_SERVERS"
"""Comma-separated base URLs of OpenAI-compatible servers to look for (empty: none)."""
DEFAULT_COMPATIBLE = ("http://127.0.0.1:1234/v1", "http://127.0.0.1:8080/v1")
"""LM Studio's and llama.cpp's llama-server's default addresses."""
PROBE_SECONDS = 0.05
"""How long the whole probe may take by default (every server at once); a slower server
is not used."""

_NOT_CHAT = ("embed", "bge-", "minilm", "rerank", "whisper", "tts")
"""Name fragments of models that cannot chat (embedding, reranking, speech models)."""


@dataclass(frozen=True)
class LocalServer:
    """A server that may be running on this machine, and how to ask it for its models."""

    prefix: str
    """The provider that talks to it ("ollama" or "openai")."""
    title: str
    """How the footer names it: "a local Ollama", "an OpenAI-compatible server"."""
    base_url: str
    """The URL its provider is given as ``base_url=``."""
    models_url: str
    """Where its model list is (a GET that runs no model)."""
    read_models: Callable[[Any], list[str]]
    """The model names in the list's JSON, most useful first."""

    @property
    def address(self) -> str:
        """``host:port``, as the reason shows it."""
        parts = urlsplit(self.base_url)
        return parts.netloc or self.base_url


@dataclass(frozen=True)
class FoundServer:
    """A server that answered, with the chat model nbagent will use."""

    server: LocalServer
    model: str

    @property
    def model_string(self) -> str:
        """``"ollama:llama3.2"``."""
        return f"{self.server.prefix}:{self.model}"

    @property
    def reason(self) -> str:
        """``"found a local Ollama at 127.0.0.1:11434"``."""
        return f"found {self.server.title} at {self.server.address}"


def ollama_models(listing: Any) -> list[str]:
    """Chat models of an ``/api/tags`` reply, the most recently changed first."""
    models = [m for m in listing.get("models", []) if isinstance(m, dict) and m.get("name")]
    models.sort(key=lambda m: str(m.get("modified_at", "")), reverse=True)
    names = [str(m["name"]) for m in models]
    return [name.removesuffix(":latest") for name in names if _chats(name)]


def openai_models(listing: Any) -> list[str]:
    """Chat models of a ``/v1/models`` reply, in the server's order."""
    names = [str(m["id"]) for m in listing.get("data", []) if isinstance(m, dict) and m.get("id")]
    return [name for name in names if _chats(name)]


def _chats(name: str) -> bool:
    lowered = name.lower()
    return not any(fragment in lowered for fragment in _NOT_CHAT)


def probe_seconds(env: Mapping[str, str]) -> float:
    """The probe's time limit: ``NBAGENT_DISCOVER`` milliseconds, 0 when it is off.

    Raises:
        ConfigError: the variable is neither ``off`` nor a number of milliseconds.
    """
    text = env.get(DISCOVER_VARIABLE, "").strip().lower()
    if not text:
        return PROBE_SECONDS
    if text in ("off", "no", "false"):
        return 0.0
    try:
        milliseconds = float(text.removesuffix("ms"))
    except ValueError:
        raise ConfigError(
            f"{DISCOVER_VARIABLE}={text!r}: expected 'off' or milliseconds such as 50"
        ) from None
    return max(milliseconds, 0.0) / 1000


def local_servers(env: Mapping[str, str]) -> list[LocalServer]:
    """Where to look, in the order a found server is preferred (empty when discovery is off)."""
    if not probe_seconds(env):
        return []
    from .ollama import ollama_base_url

    ollama = ollama_base_url(env.get("OLLAMA_HOST"))
    servers = [LocalServer("ollama", "a local Ollama", ollama, ollama + "/api/tags", ollama_models)]
    listed = env.get(SERVERS_VARIABLE)
    urls = DEFAULT_COMPATIBLE if listed is None else [u for u in listed.split(",") if u.strip()]
    for url in urls:
        base = url.strip().rstrip("/")
        servers.append(
            LocalServer(
                "openai", "an OpenAI-compatible server", base, base + "/models", openai_models
            )
        )
    return servers


_cache: dict[tuple[str, ...], FoundServer | None] = {}
_cache_lock = threading.Lock()


def find_local_server(env: Mapping[str, str]) -> FoundServer | None:
    """The first server of :func:`local_servers` that lists a chat model (cached per process)."""
    servers = local_servers(env)
    if not servers:
        return None
    key = tuple(s.models_url for s in servers)
    with _cache_lock:  # one probe per set of addresses, even from several threads
        if key not in _cache:
            _cache[key] = _probe(servers, probe_seconds(env))
        return _cache[key]


def forget_local_servers() -> None:
    """Drop the cached probes (the next agent without a model looks again)."""
    with _cache_lock:
        _cache.clear()


def _probe(servers: list[LocalServer], seconds: float) -> FoundServer | None:
    """Ask every server at once; keep the first in preference order that answered in time."""
    import httpx

    # Plain http needs no TLS context (building one costs ~80 ms); https keeps its checks.
    plain = all(s.models_url.startswith("http://") for s in servers)
    # trust_env=False: a proxy from the environment must not carry a loopback probe.
    with httpx.Client(timeout=seconds, verify=not plain, trust_env=False) as client:
        pool = concurrent.futures.ThreadPoolExecutor(len(servers), "nbagent-probe")
        futures = [pool.submit(_models_of, client, server) for server in servers]
        done, _ = concurrent.futures.wait(futures, timeout=seconds)
        pool.shutdown(wait=False, cancel_futures=True)  # a slow server is left behind
        for server, future in zip(servers, futures, strict=True):
            models = future.result() if future in done else []
            if models:
                return FoundServer(server, models[0])
    return None


def _models_of(client: Any, server: LocalServer) -> list[str]:
    """The server's chat models; empty when it is not there, slow, or not what we expected."""
    try:
        response = client.get(server.models_url)
        response.raise_for_status()
        return server.read_models(response.json())
    except Exception:  # refused, timed out, not JSON, another kind of server: not found
        return []
