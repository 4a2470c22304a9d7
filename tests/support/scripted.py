"""A deterministic model behind the loopback server, in the Chat Completions or Ollama format.

::

    def weather_script(body: dict) -> Answer:      # the request's JSON body
        if body["messages"][-1]["role"] == "user":
            return Answer("Let me check.", [("weather", {"city": "Paris"})])
        return Answer("It is sunny.")

    server = WireServer(responder=ScriptedReplies(weather_script))
    agent = http_agent("openai:gpt-test", server, tools=[weather])   # or "ollama:..."
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.support.servers import RecordedRequest, Reply, WireServer


@dataclass
class Answer:
    """What a scripted model says: text, and calls as (tool name, arguments)."""

    text: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


class ScriptedReplies:
    """A responder answering every request from ``script(body) -> Answer``.

    ``POST .../chat/completions`` gets Chat Completions (SSE when the body says
    ``stream``, else one JSON reply), ``POST /api/chat`` Ollama's format (NDJSON
    unless ``stream`` is false); anything else a 404. Text streams in 5-character
    pieces, call arguments in 4-character pieces; usage is 20 input tokens per
    message and 7 output tokens (Ollama: 42 and 7).

    Args:
        script: decides each answer from the request's JSON body.
        call_ids: False sends calls without ids, as some compatible servers do.
        gzip: compress every reply (``content-encoding: gzip``).
    """

    def __init__(
        self, script: Callable[[dict[str, Any]], Answer], *, call_ids: bool = True,
        gzip: bool = False,
    ) -> None:  # fmt: skip
        self.script = script
        self.call_ids = call_ids
        self.gzip = gzip
        self._ids = 0

    def __call__(self, request: RecordedRequest) -> Reply:
        body = request.json()
        if request.path == "/api/chat":
            answer = self.script(body)
            if body.get("stream", True):
                return self._reply("application/x-ndjson", self._ndjson(body, answer))
            reply = json.dumps(self._ollama_line(body, answer, done=True))
            return self._reply("application/json", reply.encode())
        if not request.path.endswith("/chat/completions"):
            return Reply(404, {"error": {"message": "not found"}})
        answer = self.script(body)
        if body.get("stream"):
            return self._reply("text/event-stream", self._sse(body, answer).encode())
        return self._reply("application/json", json.dumps(self._completion(body, answer)).encode())

    def _reply(self, content_type: str, payload: bytes) -> Reply:
        headers = {"content-type": content_type}
        if self.gzip:
            payload = gzip.compress(payload)
            headers["content-encoding"] = "gzip"
        return Reply(200, payload, headers)

    def _call_id(self) -> str | None:
        self._ids += 1
        return f"call_{self._ids:04d}" if self.call_ids else None

    def _completion(self, body: dict[str, Any], answer: Answer) -> dict[str, Any]:
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
        finish = "tool_calls" if answer.calls else "stop"
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 20 * len(body["messages"]), "completion_tokens": 7},
        }

    def _sse(self, body: dict[str, Any], answer: Answer) -> str:
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
        return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"

    def _ollama_line(self, body: dict[str, Any], answer: Answer, *, done: bool) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": answer.text}
        if answer.calls:
            message["tool_calls"] = [
                {"function": {"name": name, "arguments": args}} for name, args in answer.calls
            ]  # Ollama sends no call ids, and arguments as objects
        line: dict[str, Any] = {"model": body["model"], "message": message, "done": done}
        if done:
            line.update(done_reason="stop", prompt_eval_count=42, eval_count=7)
        return line

    def _ndjson(self, body: dict[str, Any], answer: Answer) -> bytes:
        lines = [
            self._ollama_line(body, Answer(answer.text[i : i + 5]), done=False)
            for i in range(0, len(answer.text), 5)
        ]
        if answer.calls:
            lines.append(self._ollama_line(body, Answer("", answer.calls), done=False))
        lines.append(self._ollama_line(body, Answer(""), done=True))
        return "".join(json.dumps(line) + "\n" for line in lines).encode()


# -- a deterministic model behind the suite's loopback server -----------------------------


def weather_script(body: dict[str, Any]) -> Answer:
    """Ask for each offered tool once with the user's city, then answer from the results."""
    messages = body["messages"]
    last = messages[-1]
    if last["role"] == "user" and body.get("tools") and body.get("tool_choice") != "none":
        city = last["content"].rstrip("?").split()[-1]
        return Answer("Let me check.", [("weather", {"city": city})])
    results = [m["content"] for m in messages if m["role"] == "tool"]
    return Answer(f"The weather: {results[-1] if results else 'unknown'}.")


class ScriptedServer:
    """The loopback server answering as a model, with a small attribute API for tests.

    Replies come from :class:`~tests.support.scripted.ScriptedReplies` (Chat Completions
    as JSON or SSE, Ollama's /api/chat as NDJSON). ``url`` is the ``/v1`` base URL;
    ``requests`` and ``headers`` are what the client sent, in order.
    """

    def __init__(self, script: Callable[[dict[str, Any]], Answer] = weather_script) -> None:
        self.replies = ScriptedReplies(script)
        self.wire = WireServer(responder=self.replies)
        self.root = self.wire.url
        self.url = self.root + "/v1"

    @property
    def script(self) -> Callable[[dict[str, Any]], Answer]:
        return self.replies.script

    @script.setter
    def script(self, script: Callable[[dict[str, Any]], Answer]) -> None:
        self.replies.script = script

    @property
    def gzip(self) -> bool:
        return self.replies.gzip

    @gzip.setter
    def gzip(self, on: bool) -> None:
        self.replies.gzip = on

    @property
    def omit_call_ids(self) -> bool:
        """True sends calls without ids, as some compatible servers do (the client invents them)."""
        return not self.replies.call_ids

    @omit_call_ids.setter
    def omit_call_ids(self, omit: bool) -> None:
        self.replies.call_ids = not omit

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.wire.bodies()

    @property
    def headers(self) -> list[dict[str, str]]:
        return [{k.lower(): v for k, v in r.headers.items()} for r in self.wire.requests]

    def close(self) -> None:
        self.wire.close()


@pytest.fixture
def openai_server() -> Iterator[ScriptedServer]:
    """A loopback Chat Completions (and Ollama) server answering with :func:`weather_script`."""
    server = ScriptedServer()
    yield server
    server.close()
