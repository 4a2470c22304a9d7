"""Google Gemini API adapter (``gemini:MODEL``), directly over httpx.

Wire format: ``WIRE_FORMATS.md`` section 3. ``generateContent`` when
not streaming, ``streamGenerateContent?alt=sse`` when streaming (no terminator: the
stream ends when the connection closes). The key goes in the ``x-goog-api-key``
header, never in the URL.

:meth:`GeminiProvider.build_body` expands the history (signatures echoed, tool
schemas converted to Gemini's subset); :class:`GeminiDecoder` turns the response
chunks, or one whole reply, into provider events.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .._internal.images import placeholders
from ..errors import ProviderError
from ..messages import ToolCall, ToolRound, Usage, new_id
from .base import Finished, ModelRequest, ProviderEvent, TextChunk, ToolCallReady, UsageReport
from .http import HttpProvider, SSEDecoder
from .schema_convert import NameMap, to_gemini_schema

if TYPE_CHECKING:
    from .batch.api import BatchApi

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


def _declaration(name: str, description: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
    declaration: dict[str, Any] = {"name": name}
    if description:
        declaration["description"] = description
    schema = to_gemini_schema(dict(parameters))
    if schema.get("properties"):
        # A tool without arguments sends no parameters (an empty OBJECT is rejected).
        declaration["parameters"] = schema
    return declaration


def _expand_round(
    contents: list[dict[str, Any]], tool_round: ToolRound, names: NameMap, images: bool = True
) -> None:
    """One round: the model content (text, calls with signatures), then N functionResponses.

    The results' images follow the function responses as ``inlineData`` parts of the
    same user content.
    """
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
            text = result.content
            if result.images and not images:
                text = "\n".join([text, *placeholders(result.images)])
            response = {"output": text} if result.ok else {"error": text}
        function_response: dict[str, Any] = {"name": names.wire(call.name), "response": response}
        if not (call.provider_data or {}).get(GENERATED_ID):
            function_response["id"] = call.id
        responses.append({"functionResponse": function_response})
    if images:
        for result in tool_round.results:
            for image in result.images:
                inline = {"mimeType": image.media_type, "data": image.base64()}
                responses.append({"inlineData": inline})
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


class GeminiDecoder(SSEDecoder):
    """GenerateContentResponse chunks (streamed or one whole reply) -> provider events.

    Calls are released at the end, so a failed stream never yields one (Gemini has
    no terminator; a clean end of the connection is the end of the reply).

    Args:
        names: the request's tool names on the wire (mapped back in calls).
        stream: False for a non-streamed reply.
    """

    provider = "gemini"

    def __init__(self, names: NameMap | None = None, *, stream: bool = True) -> None:
        super().__init__(stream=stream)
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

    def decode(self, items: list[tuple[str, Any]]) -> list[ProviderEvent]:
        """Events for these response chunks."""
        events: list[ProviderEvent] = []
        for _, chunk in items:
            events += self.chunk(chunk)
        return events

    def reply(self, payload: Any) -> list[ProviderEvent]:
        """Events for a whole ``generateContent`` reply."""
        return self.chunk(payload) + self.end()

    def chunk(self, chunk: Any) -> list[ProviderEvent]:
        """Events for one GenerateContentResponse (text now; calls and usage at the end)."""
        if isinstance(chunk, list):  # streamGenerateContent without alt=sse: a JSON array
            return [event for item in chunk for event in self.chunk(item)]
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
            self.usage.cache_read_tokens = int(metadata.get("cachedContentTokenCount") or 0)
            self.usage.reasoning_tokens = int(metadata.get("thoughtsTokenCount") or 0)
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

    def end(self) -> list[ProviderEvent]:
        """The calls and Finished; raises when the reply holds nothing usable."""
        if self.block_reason and not self.calls and not self.text_seen:
            raise self.fail("prompt_blocked", f"the prompt was blocked ({self.block_reason})")
        if not self.chunks:
            raise self.fail("empty_response", "the response ended before any data arrived")
        if not self.calls and not self.text_seen and self.finish_reason not in _OK_FINISH:
            detail = f": {self.finish_message}" if self.finish_message else ""
            message = f"the model stopped without an answer ({self.finish_reason}){detail}"
            raise ProviderError(self.provider, None, self.finish_reason, message)
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
        model: e.g. ``"gemini-2.5-flash"`` (a ``models/`` prefix is dropped).
        **options: as for :class:`~nbagent.providers.http.HttpProvider`: the key
            defaults to ``GEMINI_API_KEY``, then ``GOOGLE_API_KEY``, the base URL to
            ``GOOGLE_GEMINI_BASE_URL``; ``extra_body`` fields are merged into every
            body one level deep (``{"safetySettings": [...]}``).
    """

    name = "gemini"
    title = "Gemini"
    key_variables = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    base_url_variable = "GOOGLE_GEMINI_BASE_URL"
    default_base_url = DEFAULT_BASE_URL
    key_header, key_prefix = "x-goog-api-key", ""
    secret_headers = ("x-goog-api-key",)
    invented_id_pattern = r"gemini_call_[0-9a-f]{16}"
    default_model = "gemini-2.5-flash"
    output_mode = "native"  # responseSchema
    native_output_with_tools = False  # Gemini 2.x refuses a JSON mime type beside functions
    pricing_id = "google"
    tracing_name = "gcp.gemini"

    def native_output(
        self, extra: dict[str, Any], schema: dict[str, Any], name: str
    ) -> dict[str, Any]:
        """``generationConfig`` with a JSON response type and the schema in Gemini's subset."""
        generation = dict(extra.get("generationConfig") or {})
        generation["responseMimeType"] = "application/json"
        generation["responseSchema"] = to_gemini_schema(schema)
        return {**extra, "generationConfig": generation}

    def __init__(self, model: str, **options: Any) -> None:
        super().__init__(model.removeprefix("models/"), **options)
        version = (
            "" if self.base_url.endswith(("/v1beta", "/v1", "/v1alpha")) else f"/{API_VERSION}"
        )
        self._model_path = f"{version}/models/{quote(self.model, safe='')}"

    def request_path(self, request: ModelRequest) -> str:
        """``...:streamGenerateContent?alt=sse`` when streaming, else ``...:generateContent``."""
        if request.stream:
            return f"{self._model_path}:streamGenerateContent?alt=sse"
        return f"{self._model_path}:generateContent"

    def batch_api(self) -> BatchApi:
        """The Gemini API's batch mode, on this provider's account."""
        from .batch.gemini import GeminiBatch

        return GeminiBatch(self)

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body of ``generateContent`` / ``streamGenerateContent`` for ``request``."""
        names = tool_names(request)
        system_parts = [request.system] if request.system else []
        contents: list[dict[str, Any]] = []
        used_tools: dict[str, None] = {}

        for message in request.messages:
            if message.role == "system":
                system_parts.append(message.content)
            elif message.role == "user":
                text = message.content
                if message.images and not request.send_images:
                    text = "\n".join([text, *placeholders(message.images)])
                parts: list[dict[str, Any]] = [{"text": text}]  # "" is accepted
                if request.send_images:  # {fig}
                    parts += [
                        {"inlineData": {"mimeType": i.media_type, "data": i.base64()}}
                        for i in message.images
                    ]
                _append(contents, "user", parts)
            else:
                for tool_round in message.rounds or []:
                    _expand_round(contents, tool_round, names, request.send_images)
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
            body["systemInstruction"] = {
                "parts": [{"text": "\n\n".join(p for p in system_parts if p)}]
            }
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
        for more in (self.extra_body, request.extra):
            for key, value in more.items():
                # One level of merging: extra_body={"generationConfig": {...}} keeps
                # maxOutputTokens.
                if isinstance(value, Mapping) and isinstance(body.get(key), dict):
                    body[key] = {**body[key], **value}
                else:
                    body[key] = value
        return body

    def decoder(self, request: ModelRequest) -> GeminiDecoder:
        """A decoder for the reply to ``request``."""
        return GeminiDecoder(tool_names(request), stream=request.stream)

    def explain(self, error: ProviderError) -> ProviderError:
        """Gemini reports a bad key as HTTP 400 API_KEY_INVALID: say what to set."""
        text = f"{error.error_type} {error.message}".lower()
        hint = self.session.auth_hint
        if error.status in (400, 403) and "api key" in text.replace("_", " ") and hint not in text:
            return self.session.errors.error(
                error.status, error.error_type, f"{error.message} ({hint})"
            )
        return error
