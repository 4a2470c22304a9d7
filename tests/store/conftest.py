"""Fixtures for the history store and record/replay tests.

Every test gets its own ``NBAGENT_HOME`` (a temporary folder, see
``tests/support/history.py``), so nothing is ever written to the real user data
directory; the suite's conftest keeps provider keys from the environment away.

``openai_server`` is a real HTTP server on 127.0.0.1 speaking the OpenAI Chat
Completions wire format (JSON or SSE, as the request asks). It decides each
reply from the request with a small script, like a deterministic model: when
the conversation's last message is the user's and a tool is offered, it asks
for the tool; after tool results, it answers with them.
"""

from __future__ import annotations

import gzip
import json
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.support import history

history_home = history.history_home  # the suite's one private-history fixture, and its file
history_db = history.history_db


@pytest.fixture(autouse=True)
def _private_history(history_home: Path) -> None:
    """Every test here has its own NBAGENT_HOME, with history on."""


# -- a scripted OpenAI Chat Completions server ---------------------------------------------


@dataclass
class Answer:
    text: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def weather_script(body: dict[str, Any]) -> Answer:
    """Ask for each offered tool once with the user's city, then answer from the results."""
    messages = body["messages"]
    last = messages[-1]
    if last["role"] == "user" and body.get("tools") and body.get("tool_choice") != "none":
        city = last["content"].rstrip("?").split()[-1]
        return Answer("Let me check.", [("weather", {"city": city})])
    results = [m["content"] for m in messages if m["role"] == "tool"]
    return Answer(f"The weather: {results[-1] if results else 'unknown'}.")


class OpenAIServer:
    """A ThreadingHTTPServer on 127.0.0.1 serving ``POST /v1/chat/completions``."""

    def __init__(self, script: Callable[[dict[str, Any]], Answer] = weather_script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.gzip = False
        self.omit_call_ids = False  # as some compatible servers do: the client invents ids
        self._ids = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length))
                server.requests.append(body)
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
                if self.path == "/api/chat":  # Ollama's native API, NDJSON when streamed
                    answer = server.script(body)
                    if body.get("stream", True):
                        self._send(200, "application/x-ndjson", server.ndjson(body, answer))
                    else:
                        reply = json.dumps(server.ollama_reply(body, answer, done=True))
                        self._send(200, "application/json", reply.encode())
                    return
                if not self.path.endswith("/chat/completions"):
                    self._send(404, "application/json", b'{"error": {"message": "not found"}}')
                    return
                answer = server.script(body)
                if body.get("stream"):
                    payload = server.sse(body, answer).encode()
                    self._send(200, "text/event-stream", payload)
                else:
                    payload = json.dumps(server.completion(body, answer)).encode()
                    self._send(200, "application/json", payload)

            def _send(self, status: int, kind: str, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", kind)
                if server.gzip:
                    payload = gzip.compress(payload)
                    self.send_header("content-encoding", "gzip")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        host, port = self._server.server_address[:2]
        self.root = f"http://{host!s}:{port}"
        self.url = self.root + "/v1"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _call_id(self) -> str | None:
        self._ids += 1
        return None if self.omit_call_ids else f"call_{self._ids:04d}"

    def completion(self, body: dict[str, Any], answer: Answer) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
        if answer.calls:
            message["tool_calls"] = [
                {
                    "id": self._call_id(),
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
                for name, args in answer.calls
            ]
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if answer.calls else "stop",
                }
            ],
            "usage": {"prompt_tokens": 20 * len(body["messages"]), "completion_tokens": 7},
        }

    def ollama_reply(self, body: dict[str, Any], answer: Answer, *, done: bool) -> dict[str, Any]:
        """One /api/chat object; Ollama sends tool calls without ids, arguments as objects."""
        message: dict[str, Any] = {"role": "assistant", "content": answer.text}
        if answer.calls:
            message["tool_calls"] = [
                {"function": {"name": name, "arguments": args}} for name, args in answer.calls
            ]
        reply: dict[str, Any] = {"model": body["model"], "message": message, "done": done}
        if done:
            reply.update(done_reason="stop", prompt_eval_count=42, eval_count=7)
        return reply

    def ndjson(self, body: dict[str, Any], answer: Answer) -> bytes:
        lines = [
            self.ollama_reply(body, Answer(answer.text[i : i + 5]), done=False)
            for i in range(0, len(answer.text), 5)
        ]
        if answer.calls:
            lines.append(self.ollama_reply(body, Answer("", answer.calls), done=False))
        lines.append(self.ollama_reply(body, Answer(""), done=True))
        return "".join(json.dumps(line) + "\n" for line in lines).encode()

    def sse(self, body: dict[str, Any], answer: Answer) -> str:
        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "id": "chatcmpl-test",
                "object": "chat.completion.chunk",
                "model": body["model"],
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        chunks = [chunk({"role": "assistant", "content": ""})]
        text = answer.text
        chunks += [chunk({"content": text[i : i + 5]}) for i in range(0, len(text), 5)]
        for index, (name, args) in enumerate(answer.calls):
            arguments = json.dumps(args)
            first: dict[str, Any] = {"index": index, "id": self._call_id(), "type": "function"}
            first["function"] = {"name": name, "arguments": ""}
            chunks.append(chunk({"tool_calls": [first]}))
            for i in range(0, len(arguments), 4):
                piece = {"index": index, "function": {"arguments": arguments[i : i + 4]}}
                chunks.append(chunk({"tool_calls": [piece]}))
        chunks.append(chunk({}, "tool_calls" if answer.calls else "stop"))
        usage = {"prompt_tokens": 20 * len(body["messages"]), "completion_tokens": 7}
        chunks.append({"id": "chatcmpl-test", "choices": [], "usage": usage})
        lines = [f"data: {json.dumps(c)}\n\n" for c in chunks]
        return "".join(lines) + "data: [DONE]\n\n"


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    server = OpenAIServer()
    yield server
    server.close()


PYTHON = sys.executable
