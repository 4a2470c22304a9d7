"""Loopback servers for batch tests: a deterministic model that counts what it is asked."""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.scripted import Answer, ScriptedReplies
from tests.support.servers import RecordedRequest, Reply, WireServer


def last_user_text(body: dict[str, Any]) -> str:
    """The row's prompt: the first user message of a Chat Completions body."""
    for message in body["messages"]:
        if message["role"] == "user":
            content = message["content"]
            return content if isinstance(content, str) else json.dumps(content)
    return ""


class CountingServer(WireServer):
    """A WireServer that holds each reply ``delay`` seconds and counts requests in flight.

    ``peak`` is the most requests it ever had open at once; ``prompts`` counts the
    first user message of every request (which row asked); ``ports_in_flight`` are
    the client ports of the requests open now (which process is waiting on a reply).
    """

    def __init__(self, responder: Callable[[RecordedRequest], Reply], delay: float = 0.0) -> None:
        self.delay = delay
        self.in_flight = 0
        self.peak = 0
        self.prompts: Counter[str] = Counter()
        self._ports: Counter[int] = Counter()
        self._count_lock = threading.Lock()
        super().__init__(responder=responder)

    def ports_in_flight(self) -> set[int]:
        """The client ports of the requests the server holds a reply for right now."""
        with self._count_lock:
            return {port for port, open_now in self._ports.items() if open_now}

    async def _write(self, writer: asyncio.StreamWriter, reply: Reply) -> bool:
        port = writer.get_extra_info("peername")[1]
        with self._count_lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self._ports[port] += 1
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            return await super()._write(writer, reply)
        finally:
            with self._count_lock:
                self.in_flight -= 1
                self._ports[port] -= 1


def model(script: Callable[[str, dict[str, Any]], Any]) -> ScriptedReplies:
    """Chat Completions replies decided by ``script(row prompt, body)``."""
    return ScriptedReplies(lambda body: script(last_user_text(body), body))


@pytest.fixture
def counting() -> Iterator[Callable[..., CountingServer]]:
    """Start CountingServers for a test (closed after it)."""
    servers: list[CountingServer] = []

    def start(
        script: Callable[[str, dict[str, Any]], Answer | Reply], delay: float = 0.0
    ) -> CountingServer:
        responder = model(script)

        def respond(request: RecordedRequest) -> Reply:
            body = request.json() or {}
            if "messages" in body:
                server.prompts[last_user_text(body)] += 1
                decided = script(last_user_text(body), body)
                if isinstance(decided, Reply):  # an HTTP error for this row
                    return decided
            return responder(request)

        server = CountingServer(respond, delay)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
