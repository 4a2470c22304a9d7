"""The provider protocol: what every adapter implements.

An adapter does two jobs only: encode a :class:`ModelRequest` into its API's
request, and decode the response (streamed or not) into :data:`ProviderEvent`
values. HTTP, SSE/NDJSON framing, retries and error mapping live in the ``http``
package, whose ``HttpProvider`` template every HTTP adapter subclasses.

Expanding the compact history (see ``nbagent.messages``) into the wire format is
the adapter's job: for each assistant message, per round: the optional partial
text, the assistant turn with the calls, then the results in that API's form;
then the final text. ``ModelRequest.messages`` may end with an *in-progress*
assistant message (``content == ""``, rounds so far) while a run is going on.

What a model can do (typed output, context window, images, pricing, tracing name)
is declared by its adapter as :class:`Capabilities`; the rest of nbagent asks
:func:`nbagent.providers.capabilities` and never compares provider names.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ..messages import Message, ToolCall, ToolSpec, Usage

OutputMode = Literal["native", "tool", "prompt"]
"""How a model gives a typed answer (``output_type=``):

* ``"native"``: the API's own structured output, placed by the adapter's
  :meth:`StructuredOutput.native_output` (OpenAI's ``response_format`` json_schema,
  Gemini's ``responseSchema``, Ollama's ``format``, the embedded model's grammar);
* ``"tool"``: a ``final_answer`` tool whose arguments are the answer, forced on the
  last request with :meth:`StructuredOutput.choose_tool` (Anthropic);
* ``"prompt"``: the schema in the system prompt, the answer parsed from the text.
"""


@dataclass(frozen=True)
class Capabilities:
    """What one model of a provider can do, as its adapter declares it.

    Adapters return it from ``capabilities()`` (the HTTP template builds it from
    class attributes and the shared model-family tables in ``families.py``).
    """

    output_mode: OutputMode = "prompt"
    """How typed answers are asked for (see :data:`OutputMode`)."""
    native_output_with_tools: bool = True
    """False: a request that offers tools falls back to ``"prompt"`` (Gemini 2.x refuses
    a JSON response type beside function declarations)."""
    context_window: int | None = None
    """Input tokens the model takes; None when unknown (then nothing is fitted)."""
    images: bool = True
    """Whether tool results' images are sent; False: a text placeholder instead."""
    pricing_id: str | None = None
    """The provider id genai-prices knows this API's prices under; None: never priced."""
    text_tool_calls: bool = False
    """Tool calls written as text in the reply are recognised by default (servers that
    may lack a tool-call parser: local and compatible servers; hosted APIs that call
    natively declare False). ``Agent(text_tool_calls=...)`` overrides it."""
    tracing_name: str = ""
    """OpenTelemetry's ``gen_ai.provider.name`` (semantic conventions: "gcp.gemini"...);
    empty: the provider's own name."""


@runtime_checkable
class StructuredOutput(Protocol):
    """The wire fields of typed output, for adapters that declare "native" or "tool"."""

    def native_output(
        self, extra: dict[str, Any], schema: dict[str, Any], name: str
    ) -> dict[str, Any]:
        """``extra`` (the request's extra body fields) with the API's structured output added.

        ``schema`` is a JSON schema whose root is an object; ``name`` is its type's name.
        """
        ...

    def choose_tool(self, name: str) -> dict[str, Any]:
        """Extra body fields that make the model call the tool ``name`` now."""
        ...


@dataclass
class ModelRequest:
    """Everything an adapter needs for one model request."""

    system: str | None
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    tool_choice: Literal["auto", "none"] = "auto"
    """"none" forbids tool calls (the forced final answer). Adapters keep ``tools``
    in the request and set the API's "none" choice; Ollama, which has none, omits tools."""
    final_instruction: str | None = None
    """Extra user text appended after the last tool results (the forced-final-answer
    prompt). Adapters place it where their API allows (e.g. a text block in the same
    Anthropic user message as the tool_result blocks)."""
    stream: bool = True
    max_output_tokens: int | None = None
    temperature: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Provider-specific request fields merged into the body as-is."""
    send_images: bool = True
    """False: tool results' images go as a text placeholder ("[image 640×480 PNG shown
    to the user]"), for ``Agent(send_images=False)`` and models known not to accept images."""
    text_tool_calls: bool | None = None
    """Recognise tool calls written as text and ``<think>`` blocks in the reply (adapters
    of servers that may lack a tool parser; see ``providers/text_calls.py``); None: as
    the adapter declares (``Capabilities.text_tool_calls``)."""


@dataclass
class TextChunk:
    """A piece of answer text, in arrival order."""

    text: str


@dataclass
class ToolCallReady:
    """A complete tool call (arguments fully received). Never emitted half-way."""

    call: ToolCall


@dataclass
class UsageReport:
    """Token usage of this request. Later reports replace earlier ones (cumulative)."""

    usage: Usage


@dataclass
class Finished:
    """The response ended normally."""

    stop_reason: str | None = None
    """The provider's own stop value, for logs only; tool calls are detected from
    ``ToolCallReady`` events, never from this."""
    provider_data: dict[str, Any] | None = None
    """Opaque fields of this assistant turn to echo back next time (Anthropic thinking
    blocks with signatures, ...). Stored on the ToolRound / Message."""


ProviderEvent = TextChunk | ToolCallReady | UsageReport | Finished


@runtime_checkable
class Provider(Protocol):
    """A model behind some API.

    ``stream`` yields events for one request and ends with exactly one
    :class:`Finished`, or raises :class:`nbagent.errors.ProviderError`. It must
    produce the same events whether ``request.stream`` is true or false.

    An adapter may also declare ``capabilities() -> Capabilities`` (one that does
    not gets the model-family defaults: see :func:`nbagent.providers.capabilities`)
    and implement :class:`StructuredOutput` for the output mode it declares.
    """

    name: str
    """Provider name as in the model string: "openai", "anthropic", ..."""
    model: str

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        """The events of one request, ending with one Finished (or raising ProviderError)."""
        ...

    async def aclose(self) -> None:
        """Release connections (the provider may still be used afterwards)."""
        ...
