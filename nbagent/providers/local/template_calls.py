"""``local:/path/model.gguf``: tool calls in the form the GGUF's own chat template gives.

Which way a model is asked for tools (its *route*) is chosen once per loaded model,
from what llama.cpp read from the chat template (:meth:`LoadedModel.template_caps`):

* ``native``: the template renders the offered tools and an assistant turn's calls.
  The request carries ``tools``; llama.cpp derives from the template how the model
  writes a call, constrains it with a grammar, parses it and returns OpenAI-style
  ``tool_calls``.
* ``text``: the template has no place for tools (SmolLM2's own, many older chat
  models). The tools are described in the system prompt (:func:`text_call_instruction`)
  and calls the model writes as JSON (bare, fenced or in ``<tool_call>``) are found by
  the text-call scanner (``providers/text_calls.py``).
* ``constrained``: the embedded model's own steps (``routing.py``: a decision step
  picks the tool, a grammar writes its arguments). The route of ``local``, and of any
  GGUF given ``tool_route="constrained"``.

On both template routes the reply goes through the Chat Completions decoder with the
text-call scanner in front, so calls llama.cpp did not parse (a template whose call
format it could not derive) are still found when written as JSON: native calls when
llama.cpp parses them, otherwise the scanner.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ...messages import ToolSpec
from ..base import Finished, ModelRequest, ProviderEvent, UsageReport
from ..openai import OpenAIDecoder, expand_messages, tool_declaration
from ..text_calls import wrap_decoder
from .prompts import chat_messages

RouteKind = Literal["native", "text", "constrained"]
ROUTE_CHOICES = ("auto", "native", "text", "constrained")
"""What ``LocalProvider(tool_route=...)`` / ``NBAGENT_LOCAL_TOOL_ROUTE`` accept."""


@dataclass(frozen=True)
class ToolRoute:
    """How a loaded model is asked for tools, and why (the footer and ``%agent model``)."""

    kind: RouteKind
    reason: str

    @property
    def note(self) -> str:
        """``tool calls: native (its chat template renders tools and calls: ...)``."""
        return f"tool calls: {self.kind} ({self.reason})"


def choose_route(requested: str, caps: Mapping[str, Any] | None, *, embedded: bool) -> ToolRoute:
    """The route for a model: as asked, or (``"auto"``) from its template's capabilities.

    Args:
        requested: one of :data:`ROUTE_CHOICES`.
        caps: llama.cpp's ``chat_template_caps`` (None: not read, for ``local``).
        embedded: the model is ``local`` (SmolLM2 without a path).
    """
    if requested != "auto":
        return ToolRoute(requested, f"tool_route={requested!r}")  # type: ignore[arg-type]
    if embedded:
        return ToolRoute(
            "constrained",
            "the embedded model: a decision step picks the tool, a grammar writes its arguments",
        )
    caps = caps or {}
    if caps.get("supports_tools") and caps.get("supports_tool_calls"):
        return ToolRoute(
            "native", "its chat template renders tools and calls; llama.cpp parses the calls"
        )
    return ToolRoute(
        "text",
        "its chat template declares no tool support; calls written as JSON are scanned",
    )


def text_call_instruction(tools: list[ToolSpec]) -> str:
    """The system-prompt part that offers ``tools`` to a model whose template has no place."""
    listed = "\n".join(
        json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters})
        for t in tools
    )
    return (
        "You can call these tools:\n"
        f"{listed}\n\n"
        "To call one, reply with only a JSON object and nothing else: "
        '{"name": "<tool name>", "arguments": {<its arguments>}}. '
        "Otherwise answer in plain text."
    )


def route_messages(request: ModelRequest, route: ToolRoute) -> list[dict[str, Any]]:
    """The chat messages for ``request`` on a template route.

    Native: the OpenAI form (calls as ``tool_calls``, results as ``tool`` turns), which
    the template renders. Text: plain roles only (calls and results in words), with the
    tools described in the system prompt while the model may call them.
    """
    if route.kind == "native":
        return expand_messages(request)
    offered = request.tools if request.tool_choice != "none" else []
    instruction = text_call_instruction(offered) if offered else None
    return list(chat_messages(request, instruction))


def route_tools(request: ModelRequest, route: ToolRoute) -> dict[str, Any]:
    """The body fields that offer tools: ``tools`` and ``tool_choice``, natively only."""
    if route.kind != "native" or not request.tools:
        return {}
    tools = [tool_declaration(t.name, t.description, t.parameters) for t in request.tools]
    return {"tools": tools, "tool_choice": "none" if request.tool_choice == "none" else "auto"}


class RouteDecoder:
    """llama.cpp's streamed chunks -> provider events, through the Chat Completions decoder.

    The in-process server hands over each chunk as a dict: it is framed as the
    ``data:`` line it would be on the wire, so the reply is decoded exactly as one from
    llama.cpp's HTTP server (``openai:`` with ``base_url``), text-call scanner included.
    Usage and Finished are kept back: the provider reports them with its footer.
    """

    def __init__(self, request: ModelRequest, emit: Callable[[ProviderEvent], None]) -> None:
        self.decoder = wrap_decoder(OpenAIDecoder(stream=True), request, default=True)
        self.emit = emit
        self.finish_reason: str | None = None
        self.data: dict[str, Any] = {}
        """The decoder's ``provider_data`` (a ``<think>`` block's text, reasoning to echo)."""

    def feed(self, chunk: dict[str, Any]) -> None:
        """Decode one chunk; its text and calls go to ``emit`` as they are ready."""
        self._pass(self.decoder.feed(b"data: " + json.dumps(chunk).encode() + b"\n\n"))

    def close(self) -> None:
        """The end of the reply: held text, the calls (native or scanned), the finish reason."""
        self._pass(self.decoder.feed(b"data: [DONE]\n\n") + self.decoder.close())

    def _pass(self, events: list[ProviderEvent]) -> None:
        for event in events:
            if isinstance(event, Finished):
                self.finish_reason = event.stop_reason
                self.data = dict(event.provider_data or {})
            elif not isinstance(event, UsageReport):
                self.emit(event)
