"""Prompts for the embedded model: the tool decision, the call, the conversation.

A 135M model cannot be trusted to write a well-formed tool call, so it is never
asked to: :func:`decision_messages` is a few-shot prompt that picks a tool (or
none), :func:`call_instruction` the system prompt under which the chosen tool's
arguments are written, and :func:`chat_messages` the conversation in plain chat
turns any GGUF chat template accepts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from ...messages import Message, ToolCall, ToolSpec
from ..base import ModelRequest

# Leading marker of the tool branch. Answers may not start with "<", so the first
# character decides the branch and answer text can be streamed right away.
CALL_OPEN = "<tool_call>"

DEFAULT_SYSTEM = "You are a helpful assistant working inside a Jupyter notebook. Answer briefly."


def _signature(spec: ToolSpec) -> str:
    """``convert(value: number, unit: string = "m")``: compact, as small models read best."""
    props = spec.parameters.get("properties") or {}
    required = set(spec.parameters.get("required") or [])
    parts = []
    for name, schema in props.items():
        kind = schema.get("type", "any")
        if "enum" in schema:
            kind = " | ".join(json.dumps(v) for v in schema["enum"])
        part = f"{name}: {kind}"
        if name not in required:
            part += " = " + json.dumps(schema.get("default"))
        parts.append(part)
    return f"{spec.name}({', '.join(parts)})"


def _describe_tool(spec: ToolSpec) -> str:
    lines = [f"- {_signature(spec)}: {spec.description.strip() or spec.name}"]
    for name, schema in (spec.parameters.get("properties") or {}).items():
        if schema.get("description"):
            lines.append(f"    {name}: {schema['description']}")
    return "\n".join(lines)


def call_instruction(spec: ToolSpec) -> str:
    """System-prompt part for writing the arguments of the chosen tool."""
    return (
        "You call this tool:\n"
        f"{_describe_tool(spec)}\n\n"
        f"Reply with {CALL_OPEN} and a JSON object with the tool name and its arguments, "
        "taken from the user's request."
    )


# Requests that need no tool, shown to the model next to one example per tool.
_NO_TOOL_SHOTS = ["Hi there!", "Write a short poem about the sea.", "Who painted the Mona Lisa?"]


def decision_messages(request: ModelRequest, tools: list[ToolSpec]) -> list[dict[str, str]]:
    """A few-shot classification prompt: which tool (or none) fits the latest request?

    The examples come from the tools' own descriptions, so nothing here is tuned
    to particular prompts. Small models pick far better from examples than from
    instructions (see benchmarks/local_tool_eval.py).
    """
    options = "\n".join(f"- {t.name}: {_first_line(t.description)}" for t in tools)
    system = (
        "Pick the tool for the user's request.\nTools:\n"
        + options
        + "\n- none: no tool; chat, greetings, writing and general knowledge"
    )
    shots = [(_NO_TOOL_SHOTS[0], "none"), (_NO_TOOL_SHOTS[1], "none")]
    shots += [(_tool_shot(t), t.name) for t in tools]
    shots.append((_NO_TOOL_SHOTS[2], "none"))
    out = [{"role": "system", "content": system}]
    for user, answer in shots:
        out += [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]
    out.append({"role": "user", "content": last_user_text(request)})
    return out


def _tool_shot(spec: ToolSpec) -> str:
    """The example request for a tool: its description's first line plus a value per parameter.

    "Look up the capital city of a country: France.": the value is taken from an
    "e.g." in the parameter's description when there is one. With a value the
    example reads like a request rather than a description.
    """
    values = []
    for name, schema in (spec.parameters.get("properties") or {}).items():
        match = re.search(r"e\.g\.\s*([^,;]+)", schema.get("description") or "")
        if match:
            values.append(match.group(1).strip().rstrip("."))
        elif schema.get("type") in ("number", "integer"):
            values.append(str(3 + len(values) * 4))  # 3, 7, 11: distinct small numbers
        else:
            values.append(name)
    head = _first_line(spec.description).rstrip(".") or spec.name
    return f"{head}: {', '.join(values)}." if values else f"{head}."


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0]


def last_user_text(request: ModelRequest) -> str:
    """The latest user message's text."""
    for message in reversed(request.messages):
        if message.role == "user":
            return message.content
    return ""


def rounds_this_turn(request: ModelRequest) -> int:
    """Tool rounds since the last user message."""
    last = request.messages[-1] if request.messages else None
    return len(last.rounds or []) if last is not None and last.role == "assistant" else 0


def called_this_turn(request: ModelRequest) -> set[str]:
    """Tools already called since the last user message (never called twice per turn)."""
    last = request.messages[-1] if request.messages else None
    if last is None or last.role != "assistant":
        return set()
    return {c.name for r in last.rounds or [] for c in r.calls}


def chat_messages(request: ModelRequest, extra_system: str | None = None) -> list[dict[str, str]]:
    """Expand the compact history into plain chat-template messages.

    Only system/user/assistant roles are used, so any GGUF chat template accepts
    them: a call is the assistant turn in the same ``<tool_call>`` form the model
    writes, and its result comes back as a user turn ("Result of name: ...").
    """
    system = request.system or DEFAULT_SYSTEM
    if extra_system:
        system = system.rstrip() + "\n\n" + extra_system
    out: list[dict[str, str]] = [{"role": "system", "content": system}]
    for message in request.messages:
        for turn in _expand(message):
            if turn["role"] == "user":
                _append_user(out, turn["content"])  # results join the question's turn
            else:
                out.append(turn)
    # An in-progress assistant message ("" content) has just been expanded into its rounds.
    if request.final_instruction:
        _append_user(out, request.final_instruction)
    return out


def _expand(message: Message) -> Iterator[dict[str, str]]:
    if message.role != "assistant":
        yield {
            "role": message.role if message.role != "system" else "user",
            "content": message.content,
        }
        return
    for tool_round in message.rounds or []:
        # Calls and results go into a user turn, in words: a small model that sees an
        # assistant turn with a call (markup or prose) copies it as its answer.
        text = (tool_round.assistant_text or "").strip()
        if text:
            yield {"role": "assistant", "content": text}
        by_id = {r.call_id: r for r in tool_round.results}
        lines = []
        for call in tool_round.calls:
            result = by_id.get(call.id)
            outcome = "no result" if result is None else result.content
            verb = "returned" if result is not None and result.ok else "failed"
            lines.append(f"{_call_words(call)} {verb}: {outcome}")
        yield {"role": "user", "content": "\n".join(lines) + "\nAnswer using this result."}
    if message.content:
        yield {"role": "assistant", "content": message.content}


def _call_words(call: ToolCall) -> str:
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.arguments.items())
    return f"{call.name}({args})"


def _append_user(out: list[dict[str, str]], text: str) -> None:
    if out and out[-1]["role"] == "user":
        out[-1] = {"role": "user", "content": out[-1]["content"] + "\n\n" + text}
    else:
        out.append({"role": "user", "content": text})
