"""Anthropic Messages API adapter (``anthropic:MODEL``), directly over httpx.

Wire format: ``WIRE_FORMATS.md`` section 2. :meth:`AnthropicProvider.build_body`
expands the history (thinking blocks echoed with their signatures, one user turn
of results per round); :class:`AnthropicDecoder` turns the SSE events, or one
whole reply, into provider events.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._internal.images import Image, placeholders
from ..errors import ProviderError
from ..messages import ToolCall, ToolRound, Usage
from .base import Finished, ModelRequest, ProviderEvent, TextChunk, ToolCallReady, UsageReport
from .http import HttpProvider, SSEDecoder
from .schema_convert import NameMap

if TYPE_CHECKING:
    from .batch.api import BatchApi

logger = logging.getLogger("nbagent.providers")

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
"""The API requires ``max_tokens``; this is used when the caller sets no output cap."""

# Kinds of content blocks that carry reasoning and must be echoed back untouched.
_THINKING_TYPES = ("thinking", "redacted_thinking")


def tool_names(request: ModelRequest) -> NameMap:
    """Wire names for the request's tools (``^[a-zA-Z0-9_-]{1,128}$``)."""
    return NameMap([t.name for t in request.tools], allowed="a-zA-Z0-9_-", max_len=128)


def _expand_round(
    messages: list[dict[str, Any]], tool_round: ToolRound, names: NameMap, images: bool = True
) -> None:
    """One round: assistant turn (thinking, text, tool_use), then ONE user turn of results.

    A result's images are image blocks inside its tool_result, after its text.
    """
    content = _thinking_blocks(tool_round.provider_data)
    if tool_round.assistant_text and tool_round.assistant_text.strip():
        content.append(_text(tool_round.assistant_text))
    for call in tool_round.calls:
        content.append(
            {
                "type": "tool_use",
                "id": call.id,
                "name": names.wire(call.name),
                "input": call.arguments,
            }
        )
    _append(messages, "assistant", content)
    results: list[dict[str, Any]] = []
    by_id = {r.call_id: r for r in tool_round.results}
    for call in tool_round.calls:
        result = by_id.get(call.id)
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.id}
        if result is None:  # cannot happen with a valid history; never send an orphan tool_use
            block.update(content="Error: no result", is_error=True)
        else:
            if result.images and images:
                block["content"] = [_text(result.content or "(image)")] + [
                    _image_block(i) for i in result.images
                ]
            elif result.images:
                block["content"] = "\n".join([result.content, *placeholders(result.images)])
            elif result.content:
                block["content"] = result.content
            if not result.ok:
                block["is_error"] = True
        results.append(block)
    _append(messages, "user", results)


def _append(messages: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    """Append a turn, merging into the previous one when it has the same role."""
    if not blocks:
        return
    if messages and messages[-1]["role"] == role:
        messages[-1]["content"].extend(blocks)
    else:
        messages.append({"role": role, "content": list(blocks)})


def _image_block(image: Image) -> dict[str, Any]:
    source = {"type": "base64", "media_type": image.media_type, "data": image.base64()}
    return {"type": "image", "source": source}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _thinking_blocks(provider_data: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    blocks = (provider_data or {}).get("anthropic_thinking") or []
    return [dict(b) for b in blocks if isinstance(b, dict)]


def _input_schema(parameters: Mapping[str, Any]) -> dict[str, Any]:
    schema = dict(parameters)
    schema.setdefault("type", "object")
    schema.pop("$schema", None)
    return schema


# --------------------------------------------------------------------------- response


_USAGE_KEYS = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
)


def _usage(raw: Mapping[str, int]) -> Usage:
    """Our Usage from Anthropic counts: input includes cache writes and reads."""
    input_tokens = sum(raw.get(k, 0) for k in _USAGE_KEYS[:3])
    usage = Usage(input_tokens, raw.get("output_tokens", 0))
    usage.cache_read_tokens = raw.get("cache_read_input_tokens", 0) or 0  # priced apart
    usage.cache_write_tokens = raw.get("cache_creation_input_tokens", 0) or 0
    return usage


class AnthropicDecoder(SSEDecoder):
    """Messages SSE events (or one whole reply) -> provider events.

    Tool calls are released at ``message_stop`` (the loop only runs complete calls
    anyway), so a stream that fails half-way never yields a call, and a ``tool_use``
    cut off by ``max_tokens`` can be dropped. Text comes one TextChunk per
    ``text_delta``.

    Args:
        names: the request's tool names on the wire (mapped back in calls).
        stream: False for a non-streamed reply.
    """

    provider = "anthropic"

    def __init__(self, names: NameMap | None = None, *, stream: bool = True) -> None:
        super().__init__(stream=stream)
        self.names = names or NameMap([], allowed="a-zA-Z0-9_-", max_len=128)
        self.blocks: dict[Any, dict[str, Any]] = {}  # by the events' "index"
        self.order: list[int] = []
        self.usage = Usage()
        self._raw_usage: dict[str, int] = {}
        self.stop_reason: str | None = None
        self.stop_details: Any = None
        self.done = False

    def decode(self, items: list[tuple[str, Any]]) -> list[ProviderEvent]:
        """Events for these SSE events; anything after ``message_stop`` is ignored."""
        events: list[ProviderEvent] = []
        for name, data in items:
            if self.done or type(data) is not dict:
                continue
            if data.get("type") == "message" and not self.order:
                # The server ignored "stream" and sent the whole message as JSON.
                events += self.reply(data)
                continue
            events += self.event(name, data)
        return events

    def end(self) -> list[ProviderEvent]:
        """Nothing more; raises unless ``message_stop`` was seen."""
        if not self.done:
            raise self.fail(
                "incomplete_stream",
                "the response stream ended before message_stop (connection closed early); "
                "the partial reply was discarded",
            )
        return []

    def reply(self, payload: Any) -> list[ProviderEvent]:
        """Events for a non-streamed Messages reply (the same as its stream gives)."""
        events: list[ProviderEvent] = []
        events += self.event("message_start", {"type": "message_start", "message": payload})
        for index, block in enumerate(payload.get("content") or []):
            block = dict(block)
            start = {"type": "content_block_start", "index": index, "content_block": block}
            if block.get("type") == "tool_use":
                # Whole input already parsed: hand it over as the argument text.
                raw = json.dumps(block.get("input") or {})
                block["input"] = {}
                events += self.event("", start)
                delta = {"type": "input_json_delta", "partial_json": raw}
                events += self.event(
                    "", {"type": "content_block_delta", "index": index, "delta": delta}
                )
            else:
                events += self.event("", start)
            events += self.event("", {"type": "content_block_stop", "index": index})
        stop = {"stop_reason": payload.get("stop_reason")}
        events += self.event("", {"type": "message_delta", "delta": stop})
        events += self.event("", {"type": "message_stop"})
        # One usage report (the message_start one already has the final counts), then Finished.
        body = [e for e in events if not isinstance(e, UsageReport)]
        return [*body[:-1], UsageReport(self.usage), body[-1]]

    def event(self, event: str, data: dict[str, Any]) -> list[ProviderEvent]:
        """Events for one SSE event (``event``: its name, ``data``: its payload)."""
        kind = data.get("type") or event
        if kind == "content_block_delta":  # by far the most frequent: keep it first and short
            delta = data.get("delta") or {}
            if delta.get("type") == "text_delta":
                text = delta.get("text")
                return [TextChunk(text)] if text and data.get("index") in self.blocks else []
            return self._delta(data, delta)
        if kind == "message_start":
            self._update_usage((data.get("message") or {}).get("usage"))
            return [UsageReport(self.usage)]
        if kind == "content_block_start":
            index = data.get("index", len(self.order))
            block = dict(data.get("content_block") or {})
            block["_parts"] = []  # argument JSON / thinking text pieces, joined at the end
            self.blocks[index] = block
            self.order.append(index)
            if block.get("type") == "text" and block.get("text"):
                return [TextChunk(block["text"])]
            return []
        if kind == "content_block_stop":
            stopped = self.blocks.get(data.get("index"))
            if stopped is not None:
                stopped["_stopped"] = True
            return []
        if kind == "message_delta":
            stop = (data.get("delta") or {}).get("stop_reason")
            if stop:
                self.stop_reason = stop
                self.stop_details = (data.get("delta") or {}).get("stop_details")
            if data.get("usage"):
                self._update_usage(data["usage"])
                return [UsageReport(self.usage)]
            return []
        if kind == "message_stop":
            self.done = True
            return self._finish()
        if kind == "error":  # normally raised by the HTTP layer already
            error = data.get("error") or {}
            message = f"error during the response: {error.get('message', 'unknown error')}"
            raise ProviderError(self.provider, None, error.get("type"), message)
        return []  # ping and event types added after this was written

    def _update_usage(self, data: Any) -> None:
        # The counts are cumulative: each one present overwrites the previous value.
        if isinstance(data, dict):
            for key in _USAGE_KEYS:
                value = data.get(key)
                if isinstance(value, int):
                    self._raw_usage[key] = value
        self.usage = _usage(self._raw_usage)

    def _delta(self, data: Mapping[str, Any], delta: Mapping[str, Any]) -> list[ProviderEvent]:
        block = self.blocks.get(data.get("index"))
        if block is None:
            return []
        kind = delta.get("type")
        if kind == "input_json_delta":
            block["_parts"].append(delta.get("partial_json") or "")
        elif kind == "thinking_delta":
            block["_parts"].append(delta.get("thinking") or "")
        elif kind == "signature_delta":
            block["signature"] = delta.get("signature") or ""
        return []  # citations_delta and newer delta types carry nothing we need

    def _finish(self) -> list[ProviderEvent]:
        events: list[ProviderEvent] = []
        thinking: list[dict[str, Any]] = []
        last = self.order[-1] if self.order else None
        for index in self.order:
            block = self.blocks[index]
            kind = block.get("type")
            if kind in _THINKING_TYPES:
                echoed = {k: v for k, v in block.items() if not k.startswith("_")}
                if kind == "thinking":
                    echoed["thinking"] = block.get("thinking", "") + "".join(block["_parts"])
                thinking.append(echoed)
            elif kind == "tool_use":
                if self.stop_reason == "max_tokens" and index == last:
                    logger.warning(
                        "anthropic: tool call %s cut off by max_tokens; not run", block.get("name")
                    )
                    continue
                if not block.get("_stopped"):
                    continue  # never run a call whose arguments did not fully arrive
                raw = "".join(block["_parts"])
                events.append(ToolCallReady(_tool_call(block, raw, self.names)))
        if self.stop_reason == "refusal" and not events:
            if not any(self.blocks[i].get("type") == "text" for i in self.order):
                # Nothing to show but an empty answer: say why instead.
                details = self.stop_details if isinstance(self.stop_details, dict) else {}
                why = details.get("explanation") or "the model declined to answer"
                raise self.fail("refusal", f"refused: {why}")
        data = {"anthropic_thinking": thinking} if thinking else None
        events.append(Finished(self.stop_reason, data))
        return events


def _tool_call(block: Mapping[str, Any], raw: str, names: NameMap) -> ToolCall:
    """A ToolCall from a tool_use block; malformed argument JSON is left to the tool layer."""
    name = names.real(str(block.get("name", "")))
    call_id = str(block.get("id") or "")
    initial = block.get("input")
    if not raw.strip():
        # No deltas (or only ""): the arguments are the start block's input, usually {}.
        return ToolCall(call_id, name, dict(initial) if isinstance(initial, dict) else {})
    try:
        arguments = json.loads(raw)
    except ValueError:
        return ToolCall(call_id, name, {}, raw_arguments=raw)
    if not isinstance(arguments, dict):
        return ToolCall(call_id, name, {}, raw_arguments=raw)
    return ToolCall(call_id, name, arguments)


# --------------------------------------------------------------------------- provider


class AnthropicProvider(HttpProvider):
    """Claude models over the Messages API.

    Args:
        model: e.g. ``"claude-haiku-4-5"``.
        **options: as for :class:`~nbagent.providers.http.HttpProvider`: the key
            defaults to ``ANTHROPIC_API_KEY`` (a gateway's ``ANTHROPIC_AUTH_TOKEN`` is
            sent as a bearer token instead), the base URL to ``ANTHROPIC_BASE_URL``;
            ``extra_body`` fields are merged into every body (``{"thinking": {...}}``).
    """

    name = "anthropic"
    title = "Anthropic"
    key_variables = ("ANTHROPIC_API_KEY",)
    bearer_token_variables = ("ANTHROPIC_AUTH_TOKEN",)
    base_url_variable = "ANTHROPIC_BASE_URL"
    default_base_url = DEFAULT_BASE_URL
    key_header, key_prefix = "x-api-key", ""
    secret_headers = ("x-api-key", "authorization")
    default_model = "claude-haiku-4-5"
    output_mode = "tool"  # no structured output: a final_answer tool carries the answer
    pricing_id = "anthropic"

    def choose_tool(self, name: str) -> dict[str, Any]:
        """``tool_choice`` naming one tool (allowed even where tools are otherwise forbidden)."""
        return {"tool_choice": {"type": "tool", "name": name}}

    def headers(self, env: Mapping[str, str]) -> dict[str, str]:
        """The API version every request names."""
        return {"anthropic-version": API_VERSION}

    def request_path(self, request: ModelRequest) -> str:
        """``/v1/messages``; ``/messages`` when the base URL already ends in /v1 (gateways)."""
        return "/messages" if self.base_url.endswith("/v1") else "/v1/messages"

    def batch_api(self) -> BatchApi:
        """Anthropic's Message Batches API, on this provider's account."""
        from .batch.anthropic import AnthropicBatch

        return AnthropicBatch(self)

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body of ``POST /v1/messages`` for ``request``."""
        names = tool_names(request)
        system_parts = [request.system] if request.system else []
        messages: list[dict[str, Any]] = []
        used_tools: dict[str, None] = {}

        for message in request.messages:
            if message.role == "system":
                system_parts.append(message.content)
            elif message.role == "user":
                # Empty and whitespace-only text blocks are rejected by the API.
                text = message.content if message.content.strip() else "(empty)"
                if message.images and not request.send_images:
                    text = "\n".join([text, *placeholders(message.images)])
                blocks = [_text(text)]
                if request.send_images:
                    blocks += [_image_block(i) for i in message.images]  # {fig}
                _append(messages, "user", blocks)
            else:
                for tool_round in message.rounds or []:
                    _expand_round(messages, tool_round, names, request.send_images)
                    used_tools.update(dict.fromkeys(c.name for c in tool_round.calls))
                if message.content.strip():
                    final = _thinking_blocks(message.provider_data) + [_text(message.content)]
                    _append(messages, "assistant", final)

        if request.final_instruction:
            # After the last tool results, in the same user message (WIRE_FORMATS 2).
            _append(messages, "user", [_text(request.final_instruction)])

        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_output_tokens or DEFAULT_MAX_TOKENS,
            "messages": messages,
        }
        if system_parts:
            body["system"] = "\n\n".join(p for p in system_parts if p)
        tools = [
            {
                "name": names.wire(t.name),
                "description": t.description or "",
                "input_schema": _input_schema(t.parameters),
            }
            for t in request.tools
        ]
        offered = {t.name for t in request.tools}
        if not tools and used_tools:
            # The history holds tool blocks, so the API insists on tool definitions: declare
            # the tools that were used (no longer offered) and forbid calling them.
            tools = [
                {"name": names.wire(n), "description": "", "input_schema": {"type": "object"}}
                for n in used_tools
                if n not in offered
            ]
        if tools:
            body["tools"] = tools
            choice = "none" if request.tool_choice == "none" or not request.tools else "auto"
            body["tool_choice"] = {"type": choice}
        if request.temperature is not None:
            body["temperature"] = request.temperature
        body.update(self.extra_body)
        body.update(request.extra)
        thinking = body.get("thinking")
        if isinstance(thinking, dict) and isinstance(thinking.get("budget_tokens"), int):
            # max_tokens must exceed the thinking budget or the API rejects the request.
            budget = thinking["budget_tokens"]
            if body["max_tokens"] <= budget:
                body["max_tokens"] = budget + DEFAULT_MAX_TOKENS
        body["stream"] = request.stream
        return body

    def decoder(self, request: ModelRequest) -> AnthropicDecoder:
        """A decoder for the reply to ``request``."""
        return AnthropicDecoder(tool_names(request), stream=request.stream)
