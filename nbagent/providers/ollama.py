"""Ollama's native ``/api/chat`` (NDJSON streaming), as ``Agent("ollama:qwen3")``.

The server address comes from ``base_url=`` or ``OLLAMA_HOST`` with Ollama's own
rules (no scheme, no port, ``0.0.0.0``); see :func:`ollama_base_url`.
"""

from __future__ import annotations

import json
from typing import Any

from .._internal.images import placeholders
from ..messages import Message, ToolCall, ToolResult, Usage, new_id
from .base import Finished, ModelRequest, ProviderEvent, TextChunk, ToolCallReady, UsageReport
from .chat import chat_messages
from .http import Decoder, HttpProvider, NDJSONDecoder
from .text_calls import wrap_decoder

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
    """Ollama ``/api/chat`` with tools, streaming NDJSON or one JSON reply.

    Args:
        model: e.g. ``"qwen3"``.
        **options: as for :class:`~nbagent.providers.http.HttpProvider`. The address
            comes from ``base_url=`` or ``OLLAMA_HOST`` (Ollama's own rules, see
            :func:`ollama_base_url`); only ollama.com needs a key (``OLLAMA_API_KEY``).
    """

    name = "ollama"
    title = "Ollama"
    key_variables = ("OLLAMA_API_KEY",)
    base_url_variable = "OLLAMA_HOST"
    default_base_url = DEFAULT_HOST
    invented_id_pattern = r"call_[0-9a-f]{16}"
    path = "/api/chat"
    output_mode = "native"  # format: a JSON schema
    text_tool_calls = True  # many Ollama models' templates return calls as text
    pricing_id = None  # models on your own machine have no list price

    def native_output(
        self, extra: dict[str, Any], schema: dict[str, Any], name: str
    ) -> dict[str, Any]:
        """``format`` holding the schema (Ollama constrains the reply to it)."""
        return {**extra, "format": schema}

    def resolve_base_url(self, given: str | None) -> str:
        """``OLLAMA_HOST`` rules: no scheme, no port, ``0.0.0.0`` all mean something."""
        return ollama_base_url(given)

    def requires_key(self) -> bool:
        """A local server needs no key."""
        return False

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
        for more in (self.extra_body, request.extra):
            for key, value in more.items():
                if key == "options" and isinstance(value, dict):
                    body["options"] = {**body.get("options", {}), **value}
                else:
                    body[key] = value
        return body

    def decoder(self, request: ModelRequest) -> Decoder:
        """A decoder for the reply to ``request`` (text-format calls recognised)."""
        decoder = OllamaDecoder(stream=request.stream)
        return wrap_decoder(decoder, request, "ollama_thinking", default=True)


class OllamaDecoder(NDJSONDecoder):
    """``/api/chat`` lines (or one whole reply) -> provider events.

    The text of one ``feed`` becomes one TextChunk; tool calls are kept until the
    ``done: true`` line, and a stream that ends without it runs none.
    """

    provider = "ollama"

    def __init__(self, *, stream: bool = True) -> None:
        super().__init__(stream=stream)
        self.pending: list[dict[str, Any]] = []
        self.thinking: list[str] = []
        self.last: dict[str, Any] | None = None

    def decode(self, items: list[Any]) -> list[ProviderEvent]:
        """The text of these lines as one TextChunk."""
        texts: list[str] = []
        for chunk in items:
            if self.last is not None or type(chunk) is not dict:
                continue  # read to the end of the body: the connection is then reused
            message = chunk.get("message")
            if message:
                if message.get("content"):
                    texts.append(message["content"])
                if message.get("tool_calls"):
                    self.pending += message["tool_calls"]  # emitted once done:true arrives
                if message.get("thinking"):
                    self.thinking.append(message["thinking"])
            if chunk.get("done"):
                self.last = chunk
        return [TextChunk("".join(texts))] if texts else []

    def end(self) -> list[ProviderEvent]:
        """Usage, the calls and Finished; raises when ``done: true`` never came."""
        if self.last is None:
            # Calls seen so far may be incomplete: none of them is emitted.
            raise self.fail("incomplete_stream", "the stream ended before its done:true line")
        return _finish(self.last, self.pending, "".join(self.thinking))

    def reply(self, payload: Any) -> list[ProviderEvent]:
        """Events for a whole non-streamed reply."""
        if not isinstance(payload, dict) or "message" not in payload:
            raise self.fail("malformed_response", "reply has no message")
        message = payload.get("message") or {}
        text = message.get("content")
        events: list[ProviderEvent] = [TextChunk(text)] if text else []
        reasoning = message.get("thinking") or ""
        return events + _finish(payload, message.get("tool_calls") or [], reasoning)


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
    return chat_messages(request, _expand_assistant, _expand_user)


def _expand_user(message: Message) -> dict[str, Any]:
    """A prompt with images: its ``images`` field holds them as base64."""
    return {
        "role": "user",
        "content": message.content,
        "images": [i.base64() for i in message.images],
    }


def _expand_assistant(message: Message, images: bool = True) -> list[dict[str, Any]]:
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
            turn = {
                "role": "tool",
                "tool_name": call.name,
                "tool_call_id": call.id,
                "content": result.content,
            }
            if result.images and images:
                turn["images"] = [image.base64() for image in result.images]
            elif result.images:
                turn["content"] = "\n".join([result.content, *placeholders(result.images)])
            out.append(turn)
    if message.content:
        out.append({"role": "assistant", "content": message.content})
    return out
