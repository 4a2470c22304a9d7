"""Google Gemini API adapter (``gemini:MODEL``), directly over httpx.

Wire format: ``../shared/docs/WIRE_FORMATS.md`` section 3. ``generateContent`` when
not streaming, ``streamGenerateContent?alt=sse`` when streaming (no terminator: the
stream ends when the connection closes). The key goes in the ``x-goog-api-key``
header, never in the URL.

Pure parts, usable on recorded payloads: :func:`build_body` (history expansion and
schema conversion) and :class:`ResponseDecoder` (response chunks -> provider events).
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import quote

import httpx

from ..errors import ConfigError, ProviderError
from ..messages import ToolCall, ToolRound, Usage, new_id
from ._http import HttpProvider, HttpSession
from ._schema_convert import NameMap, to_gemini_schema
from .base import Finished, ModelRequest, ProviderEvent, TextChunk, ToolCallReady, UsageReport

logger = logging.getLogger("nbagent.providers")

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
API_VERSION = "v1beta"

# Keys nbagent adds to ToolCall.provider_data / round provider_data.
SIGNATURE = "thoughtSignature"
"""The opaque signature Gemini attached to a part; echoed back untouched."""
GENERATED_ID = "gemini_generated_id"
"""True when Gemini sent no call id and nbagent made one up (not sent back)."""
TEXT_SIGNATURE = "gemini_text_signature"
"""A signature Gemini attached to a text part (round / message provider_data)."""

# Reasons after which an empty reply is an error the user must hear about.
_OK_FINISH = {None, "STOP", "FINISH_REASON_UNSPECIFIED"}


def tool_names(request: ModelRequest) -> NameMap:
    """Wire names: start with a letter or ``_``, then ``[a-zA-Z0-9_.:-]``, at most 128."""
    return NameMap(
        [t.name for t in request.tools], allowed="a-zA-Z0-9_.:-", max_len=128, first="a-zA-Z_"
    )


# --------------------------------------------------------------------------- request


def build_body(
    request: ModelRequest,
    names: NameMap | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of ``generateContent`` / ``streamGenerateContent`` for ``request``."""
    names = names or tool_names(request)
    system_parts = [request.system] if request.system else []
    contents: list[dict[str, Any]] = []
    used_tools: dict[str, None] = {}

    for message in request.messages:
        if message.role == "system":
            system_parts.append(message.content)
        elif message.role == "user":
            _append(contents, "user", [{"text": message.content}])  # "" is accepted
        else:
            for tool_round in message.rounds or []:
                _expand_round(contents, tool_round, names)
                used_tools.update(dict.fromkeys(c.name for c in tool_round.calls))
            if message.content.strip():
                part: dict[str, Any] = {"text": message.content}
                signature = (message.provider_data or {}).get(TEXT_SIGNATURE)
                if signature:
                    part[SIGNATURE] = signature
                _append(contents, "model", [part])

    if request.final_instruction:
        # After the last function responses, in the same user content.
        _append(contents, "user", [{"text": request.final_instruction}])

    body: dict[str, Any] = {"contents": contents}
    if system_parts:
        body["systemInstruction"] = {"parts": [{"text": "\n\n".join(p for p in system_parts if p)}]}
    declarations = [
        _declaration(names.wire(t.name), t.description, t.parameters) for t in request.tools
    ]
    offered = {t.name for t in request.tools}
    if not declarations and used_tools:
        # Keep the history's calls meaningful: declare the tools used (no longer
        # offered) and forbid calling them.
        declarations = [{"name": names.wire(n)} for n in used_tools if n not in offered]
    if declarations:
        body["tools"] = [{"functionDeclarations": declarations}]
        mode = "NONE" if request.tool_choice == "none" or not request.tools else "AUTO"
        body["toolConfig"] = {"functionCallingConfig": {"mode": mode}}
    generation: dict[str, Any] = {}
    if request.temperature is not None:
        generation["temperature"] = request.temperature
    if request.max_output_tokens:
        generation["maxOutputTokens"] = request.max_output_tokens
    if generation:
        body["generationConfig"] = generation
    for more in (extra or {}, request.extra):
        for key, value in more.items():
            # One level of merging, so extra={"generationConfig": {...}} keeps maxOutputTokens.
            if isinstance(value, Mapping) and isinstance(body.get(key), dict):
                body[key] = {**body[key], **value}
            else:
                body[key] = value
    return body


def _declaration(name: str, description: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
    declaration: dict[str, Any] = {"name": name}
    if description:
        declaration["description"] = description
    schema = to_gemini_schema(dict(parameters))
    if schema.get("properties"):
        # A tool without arguments sends no parameters (an empty OBJECT is rejected).
        declaration["parameters"] = schema
    return declaration


def _expand_round(contents: list[dict[str, Any]], tool_round: ToolRound, names: NameMap) -> None:
    """One round: the model content (text, calls with signatures), then N functionResponses."""
    parts: list[dict[str, Any]] = []
    if tool_round.assistant_text and tool_round.assistant_text.strip():
        part: dict[str, Any] = {"text": tool_round.assistant_text}
        signature = (tool_round.provider_data or {}).get(TEXT_SIGNATURE)
        if signature:
            part[SIGNATURE] = signature
        parts.append(part)
    for call in tool_round.calls:
        function_call: dict[str, Any] = {"name": names.wire(call.name), "args": call.arguments}
        data = call.provider_data or {}
        if not data.get(GENERATED_ID):
            function_call["id"] = call.id
        part = {"functionCall": function_call}
        if data.get(SIGNATURE):
            part[SIGNATURE] = data[SIGNATURE]
        parts.append(part)
    _append(contents, "model", parts)

    by_id = {r.call_id: r for r in tool_round.results}
    responses = []
    for call in tool_round.calls:
        result = by_id.get(call.id)
        if result is None:  # cannot happen with a valid history; keep the counts equal
            response: dict[str, Any] = {"error": "no result"}
        else:
            response = {"output": result.content} if result.ok else {"error": result.content}
        function_response: dict[str, Any] = {"name": names.wire(call.name), "response": response}
        if not (call.provider_data or {}).get(GENERATED_ID):
            function_response["id"] = call.id
        responses.append({"functionResponse": function_response})
    _append(contents, "user", responses)


def _append(contents: list[dict[str, Any]], role: str, parts: list[dict[str, Any]]) -> None:
    """Append a content, merging it into the previous one when the role is the same."""
    if not parts:
        return
    if contents and contents[-1]["role"] == role:
        contents[-1]["parts"].extend(parts)
    else:
        contents.append({"role": role, "parts": list(parts)})


# --------------------------------------------------------------------------- response


class ResponseDecoder:
    """Turns GenerateContentResponse chunks (streamed or one whole reply) into events.

    Feed every chunk, then call :meth:`close`: calls are released there, so a
    failed stream never yields one (Gemini has no terminator; a clean end of the
    connection is the end of the reply).
    """

    def __init__(self, names: NameMap | None = None) -> None:
        self.names = names or NameMap([], allowed="a-zA-Z0-9_.:-", max_len=128)
        self.calls: list[ToolCall] = []
        self.usage = Usage()
        self.finish_reason: str | None = None
        self.finish_message: str | None = None
        self.block_reason: str | None = None
        self.text_signature: str | None = None
        self.chunks = 0
        self.text_seen = False
        self.usage_seen = False

    def feed(self, chunk: Any) -> list[ProviderEvent]:
        if isinstance(chunk, list):  # streamGenerateContent without alt=sse: a JSON array
            return [event for item in chunk for event in self.feed(item)]
        if not isinstance(chunk, dict):
            return []
        self.chunks += 1
        events: list[ProviderEvent] = []
        candidates = chunk.get("candidates") or []
        if not candidates:
            feedback = chunk.get("promptFeedback") or {}
            self.block_reason = feedback.get("blockReason") or self.block_reason
        for candidate in candidates[:1]:
            for part in (candidate.get("content") or {}).get("parts") or []:
                events += self._part(part)
            if candidate.get("finishReason"):
                self.finish_reason = candidate["finishReason"]
                self.finish_message = candidate.get("finishMessage")
        metadata = chunk.get("usageMetadata")
        if isinstance(metadata, dict):
            # Cumulative: the last report replaces the earlier ones.
            prompt = int(metadata.get("promptTokenCount") or 0)
            prompt += int(metadata.get("toolUsePromptTokenCount") or 0)
            output = int(metadata.get("candidatesTokenCount") or 0)
            output += int(metadata.get("thoughtsTokenCount") or 0)
            self.usage = Usage(prompt, output)
            self.usage_seen = True
        return events

    def _part(self, part: Mapping[str, Any]) -> list[ProviderEvent]:
        signature = part.get(SIGNATURE)
        if "functionCall" in part:
            call = part["functionCall"] or {}
            data: dict[str, Any] = {}
            if signature:
                data[SIGNATURE] = signature
            call_id = call.get("id")
            if not call_id:
                # Gemini 2.x sends no ids: make one; responses are matched by position.
                call_id = new_id("gemini_call_")
                data[GENERATED_ID] = True
            args = call.get("args")
            self.calls.append(
                ToolCall(
                    str(call_id),
                    self.names.real(str(call.get("name", ""))),
                    dict(args) if isinstance(args, dict) else {},
                    provider_data=data or None,
                )
            )
            return []
        if part.get("thought"):
            return []  # a reasoning summary, not answer text
        if "text" in part:
            if signature:
                self.text_signature = signature
            text = part.get("text") or ""
            if text:
                self.text_seen = True
                return [TextChunk(text)]
        return []

    def close(self) -> list[ProviderEvent]:
        """The calls and Finished; raises when the reply holds nothing usable."""
        if self.block_reason and not self.calls and not self.text_seen:
            raise ProviderError(
                "gemini", None, "prompt_blocked", f"the prompt was blocked ({self.block_reason})"
            )
        if not self.chunks:
            raise ProviderError(
                "gemini", None, "empty_response", "the response ended before any data arrived"
            )
        if not self.calls and not self.text_seen and self.finish_reason not in _OK_FINISH:
            detail = f": {self.finish_message}" if self.finish_message else ""
            raise ProviderError(
                "gemini",
                None,
                self.finish_reason,
                f"the model stopped without an answer ({self.finish_reason}){detail}",
            )
        events: list[ProviderEvent] = [ToolCallReady(call) for call in self.calls]
        if self.usage_seen:  # cumulative in every chunk: one report with the last counts
            events.append(UsageReport(self.usage))
        data = {TEXT_SIGNATURE: self.text_signature} if self.text_signature else None
        events.append(Finished(self.finish_reason, data))
        return events


# --------------------------------------------------------------------------- provider


class GeminiProvider(HttpProvider):
    """Gemini models over the Gemini API (AI Studio keys; Vertex AI is not covered).

    Args:
        model: e.g. ``"gemini-2.5-flash"``.
        base_url: defaults to ``GOOGLE_GEMINI_BASE_URL`` or the public endpoint.
        api_key: defaults to ``GEMINI_API_KEY``, then ``GOOGLE_API_KEY``.
        extra: fields merged into every request body (e.g. ``{"safetySettings": [...]}``).
    """

    name = "gemini"

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
        extra: Mapping[str, Any] | None = None,
        backoff: float = 0.5,
    ) -> None:
        env = os.environ if env is None else env
        if not model:
            raise ConfigError("Name a Gemini model, e.g. 'gemini:gemini-2.5-flash'.")
        self.model = model.removeprefix("models/")
        key = api_key or env.get("GEMINI_API_KEY") or env.get("GOOGLE_API_KEY") or ""
        if not key:
            raise ConfigError(
                "No Gemini API key: set GEMINI_API_KEY (or GOOGLE_API_KEY) or pass api_key=... "
                "to Agent."
            )
        self.base_url = base_url or env.get("GOOGLE_GEMINI_BASE_URL") or DEFAULT_BASE_URL
        self.extra = dict(extra or {})
        base = self.base_url.rstrip("/")
        version = "" if base.endswith(("/v1beta", "/v1", "/v1alpha")) else f"/{API_VERSION}"
        self._path = f"{version}/models/{quote(self.model, safe='')}"
        self._http = HttpSession(
            "gemini",
            base_url=self.base_url,
            headers={"x-goog-api-key": key},
            secrets=[key],
            auth_hint="set GEMINI_API_KEY or GOOGLE_API_KEY, or pass api_key=...",
            http_client=http_client,
            max_retries=max_retries,
            timeout=timeout,
            backoff=backoff,
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        names = tool_names(request)
        body = build_body(request, names, self.extra)
        decoder = ResponseDecoder(names)
        try:
            if request.stream:
                path = f"{self._path}:streamGenerateContent?alt=sse"
                async for _, chunk in self._http.stream_sse(path, body):
                    for event in decoder.feed(chunk):
                        yield event
            else:
                reply = await self._http.post_json(f"{self._path}:generateContent", body)
                for event in decoder.feed(reply):
                    yield event
        except ProviderError as exc:
            raise self._with_key_hint(exc) from None
        for event in decoder.close():
            yield event

    def _with_key_hint(self, exc: ProviderError) -> ProviderError:
        """Gemini reports a bad key as HTTP 400 API_KEY_INVALID: say what to set."""
        text = f"{exc.error_type} {exc.message}".lower()
        hint = self._http.auth_hint
        if exc.status in (400, 403) and "api key" in text.replace("_", " ") and hint not in text:
            return self._http.error(exc.status, exc.error_type, f"{exc.message} ({hint})")
        return exc
