"""OpenAI Chat Completions, and every server that speaks it (llama.cpp, vLLM, Ollama /v1...).

``Agent("openai:gpt-4o-mini")`` uses ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``;
``Agent("openai:any-name", base_url="http://127.0.0.1:8080/v1")`` talks to a
compatible server, which needs no key. Wire format: ``WIRE_FORMATS.md`` section 1.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .._internal.images import placeholders
from ..errors import ProviderError
from ..messages import Message, ToolCall, ToolResult, ToolRound, Usage, new_id
from .base import Finished, ModelRequest, ProviderEvent, TextChunk, ToolCallReady, UsageReport
from .chat import chat_messages
from .http import Decoder, HttpProvider, SSEDecoder
from .text_calls import wrap_decoder

if TYPE_CHECKING:
    from .batch.api import BatchApi


def _is_openai(base_url: str) -> bool:
    return (urlsplit(base_url).hostname or "").endswith("openai.com")


class OpenAIProvider(HttpProvider):
    """Chat Completions over httpx, streaming (SSE) or not, with tool calls.

    Args:
        model: e.g. ``"gpt-4o-mini"``, or any name a compatible server knows.
        tool_choice: sent whenever tools are allowed: ``"auto"`` (default),
            ``"required"`` or ``{"type": "function", "function": {"name": ...}}`` to
            make small local models call a tool; the forced final answer always
            sends ``"none"``.
        **options: as for :class:`~nbagent.providers.http.HttpProvider`;
            ``extra_body`` suits server-specific fields (``{"parallel_tool_calls":
            True}`` for llama.cpp's llama-server, vLLM's ``chat_template_kwargs``...).
    """

    name = "openai"
    title = "OpenAI"
    key_variables = ("OPENAI_API_KEY",)
    base_url_variable = "OPENAI_BASE_URL"
    other_variables = ("OPENAI_ORG_ID", "OPENAI_PROJECT_ID")
    default_base_url = "https://api.openai.com/v1"
    key_note = "a local base_url= server needs none"
    secret_headers = ("authorization", "api-key")  # api-key: Azure OpenAI's key header
    invented_id_pattern = r"call_[0-9a-f]{16}"
    default_model = "gpt-4o-mini"
    path = "/chat/completions"
    output_mode = "native"  # response_format json_schema
    pricing_id = "openai"  # a compatible server with an OpenAI model name is priced as OpenAI

    def __init__(self, model: str, *, tool_choice: str | dict[str, Any] = "auto", **options: Any):
        super().__init__(model, **options)
        self.tool_choice = tool_choice
        self._official = _is_openai(self.base_url)
        # OpenAI's models call natively; a compatible server may have no tool-call parser.
        self.text_tool_calls = not self._official

    def native_output(
        self, extra: dict[str, Any], schema: dict[str, Any], name: str
    ) -> dict[str, Any]:
        """``response_format`` with a ``json_schema`` (its name: letters, digits, _ and -)."""
        wire_name = (re.sub(r"[^A-Za-z0-9_-]", "_", name) or "output")[:64]
        response_format = {
            "type": "json_schema",
            "json_schema": {"name": wire_name, "schema": schema},
        }
        return {**extra, "response_format": response_format}

    def requires_key(self) -> bool:
        """Only OpenAI's own API: compatible servers (llama.cpp, vLLM...) usually need none."""
        return _is_openai(self.base_url)

    def headers(self, env: Mapping[str, str]) -> dict[str, str]:
        """The organisation and project, when the environment names them."""
        headers: dict[str, str] = {}
        if env.get("OPENAI_ORG_ID"):
            headers["openai-organization"] = env["OPENAI_ORG_ID"]
        if env.get("OPENAI_PROJECT_ID"):
            headers["openai-project"] = env["OPENAI_PROJECT_ID"]
        return headers

    def batch_api(self) -> BatchApi:
        """OpenAI's Batch API (a compatible server may not offer it), on this provider's account."""
        from .batch.openai import OpenAIBatch

        return OpenAIBatch(self)

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The Chat Completions request body for ``request``."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": expand_messages(request),
        }
        if request.tools:
            # Keep the tools for a forced final answer and say "none" instead.
            body["tools"] = [
                tool_declaration(t.name, t.description, t.parameters) for t in request.tools
            ]
            body["tool_choice"] = "none" if request.tool_choice == "none" else self.tool_choice
        if request.max_output_tokens is not None:
            # Compatible servers know only the older name.
            key = "max_completion_tokens" if self._official else "max_tokens"
            body[key] = request.max_output_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        body.update(self.extra_body)
        body.update(request.extra)
        return body

    def decoder(self, request: ModelRequest) -> Decoder:
        """A decoder for the reply to ``request`` (text-format calls recognised)."""
        decoder = OpenAIDecoder(stream=request.stream)
        return wrap_decoder(decoder, request, default=self.capabilities().text_tool_calls)


class OpenAIDecoder(SSEDecoder):
    """Chat Completions chunks (or one whole reply) -> provider events.

    The text of one ``feed`` becomes one TextChunk; tool calls are merged from their
    deltas and released at the end, once ``data: [DONE]`` was seen (a stream cut short
    runs no call).
    """

    provider = "openai"

    def __init__(self, *, stream: bool = True) -> None:
        super().__init__(stream=stream)
        self.calls = CallBuilder()
        self.finish_reason: str | None = None
        self.done = False
        self.seen_text = False
        self.whole: dict[str, Any] | None = None
        self.reasoning: dict[str, list[str]] = {}

    def decode(self, items: list[tuple[str, Any]]) -> list[ProviderEvent]:
        """The text of these chunks as one TextChunk, then the latest usage."""
        texts: list[str] = []
        usage: Usage | None = None
        for _, chunk in items:
            if chunk == "[DONE]":
                # Read on to the end of the body (it ends right here) so the
                # connection goes back to the pool instead of being closed.
                self.done = True
                continue
            if self.done or type(chunk) is not dict:
                continue  # unknown non-JSON data line
            first = (chunk.get("choices") or [{}])[0]
            if "message" in first and "delta" not in first:
                self.whole = chunk  # the server ignored "stream": one plain JSON reply
                self.done = True
                continue
            raw_usage = chunk.get("usage") or (chunk.get("x_groq") or {}).get("usage")
            if raw_usage:  # Groq puts it in x_groq when stream_options is ignored
                usage = _usage(raw_usage)
            for choice in chunk.get("choices") or ():
                if choice.get("index", 0):
                    continue  # only the first choice (n > 1 is never requested)
                delta = choice.get("delta")
                if delta:
                    # A refusal arrives instead of content: it is the answer the user sees.
                    text = delta.get("content") or delta.get("refusal")
                    if text:
                        texts.append(text)
                        self.seen_text = True
                    for tool_delta in delta.get("tool_calls") or ():
                        self.calls.add(tool_delta)
                    for field in _REASONING_FIELDS:
                        piece = delta.get(field)
                        if piece and isinstance(piece, str):
                            self.reasoning.setdefault(field, []).append(piece)
                if choice.get("finish_reason"):
                    self.finish_reason = choice["finish_reason"]
        events: list[ProviderEvent] = []
        if texts:
            events.append(TextChunk("".join(texts)))
        if usage is not None:
            events.append(UsageReport(usage))
        return events

    def end(self) -> list[ProviderEvent]:
        """The calls and Finished; raises when ``data: [DONE]`` never came."""
        if not self.done:
            # Calls received so far may be cut short: none of them is emitted.
            raise self.fail("incomplete_stream", "the stream ended before data: [DONE]")
        if self.whole is not None:
            return self.reply(self.whole)
        ready = self.calls.finish()
        if not ready and not self.seen_text:
            _check_empty(self.finish_reason)
        events: list[ProviderEvent] = [ToolCallReady(call) for call in ready]
        texts_by_field = {field: "".join(pieces) for field, pieces in self.reasoning.items()}
        events.append(Finished(self.finish_reason, _reasoning_data(texts_by_field, ready)))
        return events

    def reply(self, payload: Any) -> list[ProviderEvent]:
        """Events for a whole ``chat.completion`` reply."""
        choices = payload.get("choices") if isinstance(payload, dict) else None
        if not choices:
            raise self.fail("malformed_response", "reply has no choices")
        choice = choices[0]
        message = choice.get("message") or {}
        events: list[ProviderEvent] = []
        content = message.get("content")
        if isinstance(content, list):  # a list of text parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        content = content or message.get("refusal")  # a refusal is the answer shown
        if content:
            events.append(TextChunk(content))
        if payload.get("usage"):
            events.append(UsageReport(_usage(payload["usage"])))
        builder = CallBuilder()
        for index, tool_call in enumerate(message.get("tool_calls") or ()):
            builder.add({"index": index, **tool_call})
        ready = builder.finish()
        if not ready and not content:
            _check_empty(choice.get("finish_reason"))
        events += [ToolCallReady(call) for call in ready]
        texts_by_field = {
            f: message[f] for f in _REASONING_FIELDS if isinstance(message.get(f), str)
        }
        events.append(Finished(choice.get("finish_reason"), _reasoning_data(texts_by_field, ready)))
        return events


# --------------------------------------------------------------------------- helpers


def tool_declaration(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """One entry of the ``tools`` list (no ``parameters`` for a tool without any)."""
    function: dict[str, Any] = {"name": name, "description": description}
    if parameters:
        function["parameters"] = parameters
    return {"type": "function", "function": function}


def expand_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """The compact history as Chat Completions messages (see providers/base.py)."""
    return chat_messages(request, _expand_assistant, _expand_user)


def _expand_user(message: Message) -> dict[str, Any]:
    """A prompt with images: a text part, then one ``image_url`` part per image."""
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.content}]
    parts += [{"type": "image_url", "image_url": {"url": i.data_url()}} for i in message.images]
    return {"role": "user", "content": parts}


def _expand_assistant(message: Message, images: bool = True) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for tool_round in message.rounds or ():
        echoed = (tool_round.provider_data or {}).get("openai_reasoning") or {}
        out.append(
            {
                "role": "assistant",
                # "" rather than null: llama.cpp's server rejects null and its
                # templates need the key; OpenAI accepts both.
                "content": tool_round.assistant_text or "",
                **echoed,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": _arguments_text(call)},
                    }
                    for call in tool_round.calls
                ],
            }
        )
        results = {r.call_id: r for r in tool_round.results}
        for call in tool_round.calls:
            result = results.get(call.id) or ToolResult(
                call.id, call.name, False, "Error: no result", "no result"
            )
            content = result.content
            if result.images and not images:
                content = "\n".join([content, *placeholders(result.images)])
            out.append({"role": "tool", "tool_call_id": call.id, "content": content})
        if images:
            out += _image_message(tool_round)
    if message.content:
        out.append({"role": "assistant", "content": message.content})
    return out


def _image_message(tool_round: ToolRound) -> list[dict[str, Any]]:
    """The round's images, in one user message after its tool messages.

    Tool messages are text only; each image is introduced by a text part naming
    the call it belongs to.
    """
    parts: list[dict[str, Any]] = []
    for result in tool_round.results:
        for number, image in enumerate(result.images, start=1):
            label = f"Image {number} from tool call {result.call_id} ({result.name}):"
            parts.append({"type": "text", "text": label})
            parts.append({"type": "image_url", "image_url": {"url": image.data_url()}})
    return [{"role": "user", "content": parts}] if parts else []


def _arguments_text(call: ToolCall) -> str:
    # Send the model's own text back byte-for-byte (even when it was not valid JSON).
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False)


_REASONING_FIELDS = ("reasoning_content",)
"""Where DeepSeek, Moonshot (Kimi), llama.cpp and vLLM put the model's reasoning.
OpenRouter's and Groq's ``reasoning`` is not echoed: it is optional there, and
OpenRouter wants its signed ``reasoning_details`` rather than the plain text."""


def _reasoning_data(texts: dict[str, str], calls: list[ToolCall]) -> dict[str, Any] | None:
    """The reasoning behind tool calls, to send back with them.

    DeepSeek and Kimi thinking models reject a call turn without its ``reasoning_content``.
    """
    texts = {field: text for field, text in texts.items() if text}
    return {"openai_reasoning": texts} if texts and calls else None


def _check_empty(finish_reason: str | None) -> None:
    """A reply with no text and no call that a filter stopped is an error, not ""."""
    if finish_reason == "content_filter":
        raise ProviderError(
            "openai",
            None,
            "content_filter",
            "the reply was withheld by the server's content filter (finish_reason content_filter)",
        )


def _usage(data: dict[str, Any]) -> Usage:
    usage = Usage(int(data.get("prompt_tokens") or 0), int(data.get("completion_tokens") or 0))
    # Parts of the counts above, priced differently (nbagent.cost), when the server says.
    prompt = data.get("prompt_tokens_details") or {}
    usage.cache_read_tokens = int(prompt.get("cached_tokens") or 0)
    details = data.get("completion_tokens_details") or {}
    usage.reasoning_tokens = int(details.get("reasoning_tokens") or 0)
    return usage


def parse_arguments(text: str) -> dict[str, Any] | None:
    """Arguments as a dict, ``{}`` for empty text, None when not a JSON object."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _complete(fragments: list[str]) -> bool:
    """True when the argument fragments so far already form a JSON object."""
    text = "".join(fragments)
    return bool(text.strip()) and parse_arguments(text) is not None


class CallBuilder:
    """Merges streamed tool-call deltas per ``index``; parses arguments once, at the end.

    A delta with a new non-empty ``id`` at an index already in use starts a new
    call (some servers reuse index 0 for parallel calls).
    """

    def __init__(self) -> None:
        self._calls: list[dict[str, Any]] = []
        self._by_index: dict[Any, dict[str, Any]] = {}

    def add(self, delta: dict[str, Any]) -> None:
        """Merge one ``tool_calls`` delta (or a whole call) into the calls so far."""
        call_id = delta.get("id") or ""
        index = delta.get("index")
        if index is None and call_id:
            # No index (Gemini's and some other compatible servers): a known id
            # continues its call, a new id starts one.
            known = next((c for c in self._calls if c["id"] == call_id), None)
            index = known["index"] if known is not None else len(self._calls)
        function = delta.get("function") or {}
        current = self._by_index.get(index) if index is not None else None
        if index is None and self._calls:
            # Neither index nor id: the next fragment of the last call, unless a
            # function name follows a call whose arguments are already complete
            # (whole calls one after another, as some compatible servers send).
            last = self._calls[-1]
            if not (function.get("name") and last["name"] and _complete(last["args"])):
                current = last
        if current is None or (call_id and current["id"] and call_id != current["id"]):
            current = {"id": call_id, "name": "", "args": [], "index": index}
            self._calls.append(current)
            self._by_index[index] = current
        elif call_id and not current["id"]:
            current["id"] = call_id
        if function.get("name") and not current["name"]:
            current["name"] = function["name"]
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            current["args"].append(arguments)
        elif isinstance(arguments, dict):  # lenient servers send an object
            current["args"].append(json.dumps(arguments))

    def finish(self) -> list[ToolCall]:
        """The calls with a function name, arguments parsed (raw text kept)."""
        calls = []
        for item in self._calls:
            if not item["name"]:
                continue  # a fragment without a function name cannot be run
            raw = "".join(item["args"])
            parsed = parse_arguments(raw)
            calls.append(
                ToolCall(
                    id=item["id"] or new_id("call_"),
                    name=item["name"],
                    arguments=parsed if parsed is not None else {},
                    raw_arguments=raw,
                )
            )
        return calls
