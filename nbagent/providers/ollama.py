"""Ollama's native ``/api/chat`` (NDJSON streaming), as ``Agent("ollama:qwen3")``.

The server address comes from ``base_url=`` or ``OLLAMA_HOST`` with Ollama's own
rules (no scheme, no port, ``0.0.0.0``); see :func:`ollama_base_url`.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from ..errors import ConfigError, ProviderError
from ..messages import Message, ToolCall, ToolResult, Usage, new_id
from ._http import HttpProvider, HttpSession
from .base import (
    Finished,
    ModelRequest,
    ProviderEvent,
    TextChunk,
    ToolCallReady,
    UsageReport,
)

DEFAULT_HOST = "http://127.0.0.1:11434"


def ollama_base_url(host: str | None) -> str:
    """``OLLAMA_HOST`` as a URL, following Ollama's envconfig.Host rules.

    ``None``/"" -> ``http://127.0.0.1:11434``; ``"0.0.0.0"`` -> ``http://127.0.0.1:11434``;
    ``"myhost"`` -> ``http://myhost:11434``; ``"https://h"`` -> ``https://h:443``;
    ``"http://h"`` -> ``http://h:80``. ``0.0.0.0`` (listen on all interfaces) is
    not an address to connect to, so it becomes 127.0.0.1.
    """
    text = (host or "").strip()
    if not text:
        return DEFAULT_HOST
    default_port = "11434"
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "http", text
    elif scheme == "http":
        default_port = "80"
    elif scheme == "https":
        default_port = "443"
    hostport, _, path = rest.partition("/")
    hostname, port = _split_host_port(hostport)
    if not hostname or hostname in ("0.0.0.0", "::", "[::]"):
        hostname = "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        port = default_port
    if ":" in hostname and not hostname.startswith("["):
        hostname = f"[{hostname}]"  # IPv6 literal
    url = f"{scheme}://{hostname}:{port}"
    path = path.strip("/")
    if path and path != "api":
        url += "/" + path
    return url


def _split_host_port(hostport: str) -> tuple[str, str]:
    if hostport.startswith("["):  # [::1]:11434
        inside, _, after = hostport[1:].partition("]")
        return inside, after.lstrip(":")
    if hostport.count(":") == 1:
        name, _, port = hostport.partition(":")
        return name, port
    return hostport, ""  # a bare name or a bare IPv6 address


class OllamaProvider(HttpProvider):
    """Ollama ``/api/chat`` with tools, streaming NDJSON or one JSON reply."""

    name = "ollama"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        env: Mapping[str, str] | None = None,
        max_retries: int = 3,
        timeout: float | httpx.Timeout | None = None,
    ) -> None:
        env = os.environ if env is None else env
        if not model:
            raise ConfigError("Name a model: Agent('ollama:qwen3').")
        self.model = model
        self.base_url = ollama_base_url(base_url or env.get("OLLAMA_HOST"))
        key = api_key or env.get("OLLAMA_API_KEY")  # only ollama.com needs one
        headers = {"authorization": f"Bearer {key}"} if key else {}
        self._http = HttpSession(
            self.name,
            base_url=self.base_url,
            headers=headers,
            secrets=[key],
            auth_hint="set OLLAMA_API_KEY or pass api_key=...",
            http_client=http_client,
            max_retries=max_retries,
            timeout=timeout,
        )

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The /api/chat request body for ``request``."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": expand_messages(request),
            "stream": request.stream,  # the server defaults to true: always say it
        }
        # Ollama has no tool_choice: a forced final answer simply gets no tools.
        if request.tools and request.tool_choice != "none":
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters or {"type": "object", "properties": {}},
                    },
                }
                for t in request.tools
            ]
        options: dict[str, Any] = {}
        if request.temperature is not None:
            options["temperature"] = request.temperature
        if request.max_output_tokens is not None:
            options["num_predict"] = request.max_output_tokens
        if options:
            body["options"] = options
        for key, value in request.extra.items():
            if key == "options" and isinstance(value, dict):
                body["options"] = {**body.get("options", {}), **value}
            else:
                body[key] = value
        return body

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        body = self.build_body(request)
        if not request.stream:
            data = await self._http.post_json("/api/chat", body)
            if not isinstance(data, dict) or "message" not in data:
                raise ProviderError(self.name, None, "malformed_response", "reply has no message")
            for event in _parse_chunk(data, []):
                yield event
            message = data.get("message") or {}
            reasoning = message.get("thinking") or ""
            for event in _finish(data, message.get("tool_calls") or [], reasoning):
                yield event
            return
        pending: list[dict[str, Any]] = []
        thinking: list[str] = []
        last: dict[str, Any] | None = None
        async for batch in self._http.stream_ndjson_batches("/api/chat", body):
            texts: list[str] = []
            for chunk in batch:
                if last is not None or type(chunk) is not dict:
                    continue  # read to the end of the body: the connection is then reused
                message = chunk.get("message")
                if message:
                    if message.get("content"):
                        texts.append(message["content"])
                    if message.get("tool_calls"):
                        pending += message["tool_calls"]  # emitted once done:true arrives
                    if message.get("thinking"):
                        thinking.append(message["thinking"])
                if chunk.get("done"):
                    last = chunk
            if texts:
                yield TextChunk("".join(texts))  # one network read, one chunk of text
        if last is None:
            # Calls seen so far may be incomplete: none of them is emitted.
            raise ProviderError(
                self.name, None, "incomplete_stream", "the stream ended before its done:true line"
            )
        for event in _finish(last, pending, "".join(thinking)):
            yield event


def _parse_chunk(chunk: dict[str, Any], pending: list[dict[str, Any]]) -> list[ProviderEvent]:
    """Text of one chunk; its tool calls are kept in ``pending`` until ``done``."""
    message = chunk.get("message") or {}
    text = message.get("content")
    if message.get("tool_calls"):
        pending += message["tool_calls"]
    return [TextChunk(text)] if text else []


def _finish(
    chunk: dict[str, Any], tool_calls: list[dict[str, Any]], thinking: str = ""
) -> list[ProviderEvent]:
    events: list[ProviderEvent] = []
    usage = Usage(int(chunk.get("prompt_eval_count") or 0), int(chunk.get("eval_count") or 0))
    events.append(UsageReport(usage))
    for item in tool_calls:
        call = _tool_call(item)
        if call is not None:
            events.append(ToolCallReady(call))
    # done_reason is "stop" even after tool calls: calls are detected above, not here.
    # The reasoning behind calls goes back with them (gpt-oss and qwen3 templates
    # show it to the model in the rest of the turn).
    calls_made = any(isinstance(e, ToolCallReady) for e in events)
    data = {"ollama_thinking": thinking} if thinking and calls_made else None
    events.append(Finished(chunk.get("done_reason"), data))
    return events


def _tool_call(item: dict[str, Any]) -> ToolCall | None:
    function = item.get("function") or {}
    name = function.get("name")
    if not name:
        return None
    arguments = function.get("arguments")
    raw: str | None = None
    if isinstance(arguments, str):  # some builds send a string; parse it once here
        raw = arguments
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            parsed = {}
        arguments = parsed if isinstance(parsed, dict) else {}
    elif not isinstance(arguments, dict):
        arguments = {}
    return ToolCall(
        id=item.get("id") or new_id("call_"), name=name, arguments=arguments, raw_arguments=raw
    )


def expand_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """The compact history as /api/chat messages (see providers/base.py)."""
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    for message in request.messages:
        if message.role == "assistant":
            out += _expand_assistant(message)
        else:
            out.append({"role": message.role, "content": message.content})
    if request.final_instruction:
        out.append({"role": "user", "content": request.final_instruction})
    return out


def _expand_assistant(message: Message) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for tool_round in message.rounds or ():
        turn: dict[str, Any] = {"role": "assistant", "content": tool_round.assistant_text or ""}
        thinking = (tool_round.provider_data or {}).get("ollama_thinking")
        if thinking:
            turn["thinking"] = thinking
        out.append(
            {
                **turn,
                "tool_calls": [
                    {
                        "id": call.id,
                        "function": {
                            "index": index,
                            "name": call.name,
                            "arguments": call.arguments,
                        },
                    }
                    for index, call in enumerate(tool_round.calls)
                ],
            }
        )
        results = {r.call_id: r for r in tool_round.results}
        for call in tool_round.calls:
            result = results.get(call.id) or ToolResult(
                call.id, call.name, False, "Error: no result", "no result"
            )
            # Older servers know only tool_name, newer ones match tool_call_id: send both.
            out.append(
                {
                    "role": "tool",
                    "tool_name": call.name,
                    "tool_call_id": call.id,
                    "content": result.content,
                }
            )
    if message.content:
        out.append({"role": "assistant", "content": message.content})
    return out
