"""ScriptedModel: a real provider whose replies come from a Python function.

Tests and tutorials use it to drive the loop deterministically::

    def script(request):
        if not request.tool_results:           # first round: ask for a tool
            return reply(calls=[call("add", a=2, b=3)])
        return reply(f"The sum is {request.tool_results[-1].content}.")

    agent = Agent(ScriptedModel(script), tools=[add])

It goes through exactly the same loop as an HTTP provider: its text streams in
chunks, calls arrive as complete ToolCallReady events, usage is reported.
Every request it received is kept in ``.requests`` for assertions.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import itertools
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .messages import Message, ToolCall, ToolResult, ToolSpec, Usage
from .providers import (
    Capabilities,
    Finished,
    ModelRequest,
    ProviderEvent,
    TextChunk,
    ToolCallReady,
    UsageReport,
)
from .providers.families import family_capabilities


@dataclass
class Reply:
    """One scripted model reply: text (streamed in chunks) and/or tool calls."""

    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)


_call_ids = itertools.count(1)


def call(name: str, /, **arguments: Any) -> ToolCall:
    """A tool call for a scripted reply."""
    return ToolCall(id=f"call_{next(_call_ids)}", name=name, arguments=arguments)


def raw_call(name: str, raw_arguments: str) -> ToolCall:
    """A tool call whose arguments arrive as (possibly malformed) text, as OpenAI sends them."""
    call_id = f"call_{next(_call_ids)}"
    return ToolCall(id=call_id, name=name, arguments={}, raw_arguments=raw_arguments)


def reply(text: str = "", calls: Iterable[ToolCall] = ()) -> Reply:
    """A scripted reply: ``text`` (streamed in chunks) and/or tool ``calls``."""
    return Reply(text, list(calls))


@dataclass
class ScriptedRequest:
    """What the scripted model received: the request plus convenient views of it."""

    request: ModelRequest
    messages: list[Message]
    """A snapshot of the conversation as sent (deep-copied, so later rounds do not change it)."""

    @property
    def tools(self) -> list[str]:
        """Names of the tools offered in this request."""
        return [t.name for t in self.request.tools]

    @property
    def tool_specs(self) -> list[ToolSpec]:
        """Name, description and JSON schema of each tool, as an adapter would send them."""
        return list(self.request.tools)

    @property
    def tool_choice(self) -> str:
        """``"auto"``, or ``"none"`` for the forced final answer."""
        return self.request.tool_choice

    @property
    def final_instruction(self) -> str | None:
        """The forced-final-answer prompt, when this is that request."""
        return self.request.final_instruction

    @property
    def prompt(self) -> str:
        """The latest user message."""
        return next((m.content for m in reversed(self.messages) if m.role == "user"), "")

    @property
    def tool_results(self) -> list[ToolResult]:
        """Results of the current run's rounds so far (what the model sees as tool output)."""
        last = self.messages[-1] if self.messages else None
        if last is None or last.role != "assistant" or not last.rounds:
            return []
        return [r for rnd in last.rounds for r in rnd.results]

    @property
    def round_index(self) -> int:
        """How many tool rounds of the current run came before this request."""
        last = self.messages[-1] if self.messages else None
        return len(last.rounds or []) if last is not None and last.role == "assistant" else 0


Script = Callable[[ScriptedRequest], "Reply | str | Awaitable[Reply | str]"]


def _echo(request: ScriptedRequest) -> Reply:
    return Reply(f"You said: {request.prompt}")


class ScriptedModel:
    """A provider driven by ``script(request) -> Reply | str`` (sync or async).

    Args:
        script: the function deciding each reply; or a list of replies used in order.
        chunk_size: characters per streamed text chunk.
        delay: seconds to sleep before each chunk (to test live rendering and Stop).
        model: the model name shown in footers ("scripted:NAME"); a model string
            passed as ``script`` (as ``get_provider("scripted:NAME")`` does) sets it too.
        capabilities: what the model declares it can do (default: typed output in the
            prompt, no price, the model name's family facts for window and images).
    """

    name = "scripted"

    def __init__(
        self,
        script: Script | Iterable[Reply | str] | str | None = None,
        *,
        chunk_size: int = 8,
        delay: float = 0.0,
        model: str = "",
        capabilities: Capabilities | None = None,
        **_options: Any,
    ) -> None:
        if isinstance(script, str):  # model string "scripted:NAME"
            model, script = script, None
        if script is None:
            script = _echo
        if not callable(script):
            replies = list(script)
            iterator = iter(replies)

            def from_list(_request: ScriptedRequest) -> Reply | str:
                try:
                    return next(iterator)
                except StopIteration:
                    message = f"ScriptedModel ran out of its {len(replies)} replies"
                    raise RuntimeError(message) from None

            script = from_list
        self.script: Script = script
        self.model = model
        self._capabilities = capabilities
        self.chunk_size = max(1, chunk_size)
        self.delay = delay
        self.requests: list[ScriptedRequest] = []

    def __repr__(self) -> str:
        return f"ScriptedModel(model={self.model!r})"

    def capabilities(self) -> Capabilities:
        """What this scripted model declares (see the ``capabilities`` argument)."""
        if self._capabilities is None:
            self._capabilities = family_capabilities(self.model, tracing_name=self.name)
        return self._capabilities

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        """Ask the script for its reply and deliver it as a provider would."""
        snapshot = [Message.from_dict(m.to_dict()) for m in request.messages]
        # Live values (DataFrames) are not serialised; keep them visible to scripts.
        for copy, original in zip(snapshot, request.messages, strict=True):
            for rnd_copy, rnd in zip(copy.rounds or [], original.rounds or [], strict=True):
                for res_copy, res in zip(rnd_copy.results, rnd.results, strict=True):
                    res_copy.value = res.value
        scripted = ScriptedRequest(request, snapshot)
        self.requests.append(scripted)
        answer = self.script(scripted)
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, str):
            answer = Reply(answer)
        # Non-streaming requests get the whole text at once, as adapters deliver it.
        step = self.chunk_size if request.stream else max(1, len(answer.text))
        for start in range(0, len(answer.text), step):
            if self.delay:
                await asyncio.sleep(self.delay)
            yield TextChunk(answer.text[start : start + step])
        calls = answer.calls if request.tool_choice == "auto" else []
        for c in calls:
            # A fresh object per request, as a real provider's decoder makes: a script
            # may return the same ToolCall twice, and the loop may renumber its id.
            yield ToolCallReady(dataclasses.replace(c, arguments=dict(c.arguments)))
        yield UsageReport(Usage(_count_tokens(request), max(1, len(answer.text) // 4)))
        yield Finished("tool_calls" if calls else "stop")

    async def aclose(self) -> None:
        """Nothing to close: the scripted model holds no connections."""
        return None


def _count_tokens(request: ModelRequest) -> int:
    """A rough input-token count (4 characters a token), so usage and budgets behave."""
    size = len(request.system or "")
    for message in request.messages:
        size += len(message.content)
        for rnd in message.rounds or []:
            size += len(rnd.assistant_text or "")
            size += sum(len(json.dumps(c.arguments)) + len(c.name) for c in rnd.calls)
            size += sum(len(r.content) for r in rnd.results)
    size += sum(len(json.dumps(t.to_dict())) for t in request.tools)
    return max(1, size // 4)
