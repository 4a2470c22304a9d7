"""Core values: tool calls, results, rounds, messages and conversations.

Plain dataclasses with a JSON round trip. No I/O, no provider knowledge: each
provider adapter *expands* these compact values into its own wire format.

An assistant message stores only its final answer in ``content``; the tool work
that led to it lives in ``rounds`` (one :class:`ToolRound` per model request that
asked for tools). Whatever ends a run, every call in ``rounds`` has exactly one
result, so any provider accepts the expanded history (the *history invariant*).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from ._internal.bounded import dumps
from ._internal.images import Image
from ._internal.markdown_text import code_fence, code_span, inline_text
from ._internal.redaction import scrub

Role = Literal["system", "user", "assistant"]


def new_id(prefix: str = "") -> str:
    """A short random id, used for conversations and for calls a provider left unnamed."""
    return prefix + uuid.uuid4().hex[:16]


@dataclass
class Usage:
    """Token counts reported by the provider, and their price when it is known."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = field(default=0, compare=False)
    """Part of ``input_tokens`` read from the provider's prompt cache (when reported)."""
    cache_write_tokens: int = field(default=0, compare=False)
    """Part of ``input_tokens`` written to the prompt cache (Anthropic reports it)."""
    reasoning_tokens: int = field(default=0, compare=False)
    """Part of ``output_tokens`` spent on reasoning (when reported)."""
    cost: float | None = field(default=None, compare=False)
    """Best-effort USD price (``nbagent.cost``, from genai-prices); None when unknown.
    Equality compares the token counts only (the detail counts and the price follow them)."""
    estimated: bool = field(default=False, compare=False)
    """True when nbagent estimated some of these counts (the server reported none, or
    the run was cancelled mid-stream before its report came): the footer and the
    history say so."""

    def __repr__(self) -> str:
        parts = [f"input_tokens={self.input_tokens}", f"output_tokens={self.output_tokens}"]
        for key in ("cache_read_tokens", "cache_write_tokens", "reasoning_tokens"):
            if getattr(self, key):
                parts.append(f"{key}={getattr(self, key)}")
        if self.cost is not None:
            parts.append(f"cost={self.cost:.6g}")
        if self.estimated:
            parts.append("estimated=True")
        return f"Usage({', '.join(parts)})"

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            _add_costs(self, other),
            self.estimated or other.estimated,
        )

    def to_dict(self) -> dict[str, Any]:
        """This value as plain JSON-ready data (the optional counts only when set)."""
        data: dict[str, Any] = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }
        for key in ("cache_read_tokens", "cache_write_tokens", "reasoning_tokens"):
            if getattr(self, key):
                data[key] = getattr(self, key)
        if self.cost is not None:
            data["cost"] = self.cost
        if self.estimated:
            data["estimated"] = True
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Usage:
        """Rebuild the value that :meth:`to_dict` wrote."""
        data = data or {}
        cost = data.get("cost")
        return cls(
            int(data.get("input_tokens", 0)),
            int(data.get("output_tokens", 0)),
            int(data.get("cache_read_tokens", 0)),
            int(data.get("cache_write_tokens", 0)),
            int(data.get("reasoning_tokens", 0)),
            None if cost is None else float(cost),
            bool(data.get("estimated", False)),
        )


def _add_costs(a: Usage, b: Usage) -> float | None:
    """The price of both: an empty usage adds nothing, an unknown price makes it unknown."""
    if a.total_tokens == 0 and a.cost is None:
        return b.cost
    if b.total_tokens == 0 and b.cost is None:
        return a.cost
    return None if a.cost is None or b.cost is None else a.cost + b.cost


def _when_set(**optional: Any) -> dict[str, Any]:
    """The optional fields that hold something (``to_dict`` leaves out empty ones)."""
    return {key: value for key, value in optional.items() if value}


@dataclass
class ToolSpec:
    """What a model is told about one tool: name, description and JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """This value as plain JSON-ready data."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclass
class ToolCall:
    """One call the model asked for."""

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str | None = None
    """The argument text exactly as the model sent it, when it was text (OpenAI sends a
    JSON string; it may be malformed, and the tool layer repairs or rejects it)."""
    provider_data: dict[str, Any] | None = None
    """Opaque per-call fields the provider needs echoed back (Gemini's thoughtSignature)."""

    def to_dict(self) -> dict[str, Any]:
        """This value as plain JSON-ready data."""
        data: dict[str, Any] = {"id": self.id, "name": self.name, "arguments": self.arguments}
        if self.raw_arguments is not None:  # "" (a call without arguments) is kept as sent
            data["raw_arguments"] = self.raw_arguments
        return data | _when_set(provider_data=self.provider_data)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        """Rebuild the value that :meth:`to_dict` wrote."""
        return cls(
            id=data["id"],
            name=data["name"],
            arguments=dict(data.get("arguments") or {}),
            raw_arguments=data.get("raw_arguments"),
            provider_data=data.get("provider_data"),
        )


@dataclass
class ToolResult:
    """The outcome of one call. ``content`` is exactly what the model sees."""

    call_id: str
    name: str
    ok: bool
    content: str
    error: str | None = None
    """Short error text when ``ok`` is false (also part of ``content``)."""
    duration_s: float = 0.0
    truncated: bool = False
    """True when ``content`` was cut to fit the output budget."""
    traceback: str | None = None
    """The Python traceback of a tool that raised, for the human (not sent to the model)."""
    approval: str | None = None
    """How a ``requires_approval`` call was decided, e.g. "approved by user"."""
    value: Any = field(default=None, repr=False, compare=False)
    """The live Python object the tool returned (a DataFrame stays a DataFrame).
    Kept for display and ``RunResult.tool_results``; never serialised."""
    preview: tuple[str | None, str | None] | None = field(default=None, repr=False, compare=False)
    """``(type name, JSON preview)`` of ``value``, computed off the event loop when the
    tool returned (the history stores it; None: compute it from ``value``)."""
    images: list[Image] = field(default_factory=list, repr=False)
    """Images the model is shown with this result (a figure the tool returned or that
    ``run_python`` drew); each adapter places them as its API allows."""

    def to_dict(self) -> dict[str, Any]:
        """This value as plain JSON-ready data."""
        return {
            "call_id": self.call_id,
            "name": self.name,
            "ok": self.ok,
            "content": self.content,
            "error": self.error,
            "duration_s": self.duration_s,
            "truncated": self.truncated,
            **_when_set(
                traceback=self.traceback,
                approval=self.approval,
                images=[image.to_dict() for image in self.images],
            ),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolResult:
        """Rebuild the value that :meth:`to_dict` wrote."""
        return cls(
            call_id=data["call_id"],
            name=data["name"],
            ok=bool(data["ok"]),
            content=data.get("content", ""),
            error=data.get("error"),
            duration_s=float(data.get("duration_s", 0.0)),
            truncated=bool(data.get("truncated", False)),
            traceback=data.get("traceback"),
            approval=data.get("approval"),
            images=[Image.from_dict(i) for i in data.get("images") or ()],
        )


@dataclass
class ToolRound:
    """One model request that asked for tools, and the results of those tools."""

    assistant_text: str | None
    """Text the model produced before asking for the calls (may be None)."""
    calls: list[ToolCall]
    results: list[ToolResult] = field(default_factory=list)
    """One result per call, in call order."""
    usage: Usage = field(default_factory=Usage)
    duration_s: float = 0.0
    """Wall time of the round: model request plus tool execution."""
    provider_data: dict[str, Any] | None = None
    """Opaque fields of the assistant turn to echo back (Anthropic thinking blocks)."""

    def to_dict(self) -> dict[str, Any]:
        """This value as plain JSON-ready data."""
        return {
            "assistant_text": self.assistant_text,
            "calls": [c.to_dict() for c in self.calls],
            "results": [r.to_dict() for r in self.results],
            "usage": self.usage.to_dict(),
            "duration_s": self.duration_s,
            **_when_set(provider_data=self.provider_data),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolRound:
        """Rebuild the value that :meth:`to_dict` wrote."""
        return cls(
            assistant_text=data.get("assistant_text"),
            calls=[ToolCall.from_dict(c) for c in data.get("calls", [])],
            results=[ToolResult.from_dict(r) for r in data.get("results", [])],
            usage=Usage.from_dict(data.get("usage")),
            duration_s=float(data.get("duration_s", 0.0)),
            provider_data=data.get("provider_data"),
        )


@dataclass
class Message:
    """A user or assistant message. Assistant tool work lives in ``rounds``."""

    role: Role
    content: str
    rounds: list[ToolRound] | None = None
    usage: Usage | None = None
    model: str | None = None
    provider_data: dict[str, Any] | None = None
    """Opaque fields of the final assistant turn to echo back."""
    stop_reason: str | None = None
    images: list[Image] = field(default_factory=list, repr=False)
    """Images attached to a user message (``{fig}`` in ``%%agent``)."""

    def to_dict(self) -> dict[str, Any]:
        """This value as plain JSON-ready data."""
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.images:
            data["images"] = [image.to_dict() for image in self.images]
        if self.rounds is not None:
            data["rounds"] = [r.to_dict() for r in self.rounds]
        if self.usage is not None:
            data["usage"] = self.usage.to_dict()
        for key in ("model", "provider_data", "stop_reason"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        """Rebuild the value that :meth:`to_dict` wrote."""
        rounds = data.get("rounds")
        return cls(
            role=data["role"],
            content=data.get("content", ""),
            rounds=[ToolRound.from_dict(r) for r in rounds] if rounds is not None else None,
            usage=Usage.from_dict(data["usage"]) if "usage" in data else None,
            model=data.get("model"),
            provider_data=data.get("provider_data"),
            stop_reason=data.get("stop_reason"),
            images=[Image.from_dict(i) for i in data.get("images") or ()],
        )


@dataclass
class Conversation:
    """A system prompt and the messages exchanged so far."""

    id: str = field(default_factory=lambda: new_id("c_"))
    system: str | None = None
    messages: list[Message] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """This value as plain JSON-ready data."""
        return {
            "id": self.id,
            "system": self.system,
            "messages": [m.to_dict() for m in self.messages],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Conversation:
        """Rebuild the value that :meth:`to_dict` wrote."""
        return cls(
            id=data["id"],
            system=data.get("system"),
            messages=[Message.from_dict(m) for m in data.get("messages", [])],
        )

    def to_json(self, **kwargs: Any) -> str:
        """This conversation as JSON text (``kwargs`` go to :func:`json.dumps`)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, **kwargs)

    @classmethod
    def from_json(cls, text: str) -> Conversation:
        """The conversation that :meth:`to_json` wrote."""
        return cls.from_dict(json.loads(text))

    def to_markdown(self) -> str:
        """A readable transcript: user turns, tool rounds (calls and results), answers."""
        lines: list[str] = [f"# Conversation {self.id}", ""]
        if self.system:
            lines += ["**System:** " + inline_text(self.system), ""]
        for message in self.messages:
            if message.role == "user":
                lines += ["## User", "", inline_text(message.content), ""]
                continue
            lines += ["## Assistant", ""]
            for number, tool_round in enumerate(message.rounds or [], start=1):
                lines.append(f"### Round {number}")
                if tool_round.assistant_text:
                    lines += ["", inline_text(tool_round.assistant_text)]
                lines.append("")
                for call, result in zip(tool_round.calls, tool_round.results, strict=False):
                    args = dumps(call.arguments)
                    status = "ok" if result.ok else "error"
                    lines.append(f"- {code_span(f'{call.name}({args})')} -> {status}")
                    fence = code_fence(result.content)
                    lines += ["", *("  " + x for part in fence for x in part.splitlines())]
                lines.append("")
            lines += [inline_text(message.content), ""]
        return scrub("\n".join(lines))
