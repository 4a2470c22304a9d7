"""Typed output: ``agent.run_sync(prompt, output_type=T)`` returns a validated ``T``.

``T`` may be a pydantic model, a dataclass, a ``TypedDict``, a primitive, or
``list[...]`` of these; pydantic's ``TypeAdapter`` gives its JSON schema and
validates the answer. How the model is asked is what its provider declares
(``Capabilities.output_mode``): the API's native structured output, placed by the
adapter (OpenAI's json_schema, Gemini's responseSchema, Ollama's format, the
embedded model's grammar); a ``final_answer`` tool whose arguments are the answer
(Anthropic); or the schema in the system prompt. A schema whose root
is not an object (a list, a number) is wrapped as ``{"value": ...}`` on the wire,
since tool arguments and OpenAI's json_schema need an object.

A value that fails validation goes back to the model with pydantic's errors
(:data:`RETRIES` times), then the run stops with ``stop_reason="output_invalid"``
and the raw text kept in ``result.text``.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from ..errors import ConfigError
from ..messages import ToolCall, ToolSpec
from ..providers import Provider, StructuredOutput, capabilities
from ..providers.base import ModelRequest

RETRIES = 2
"""Validation retries before a run stops with ``stop_reason="output_invalid"``."""

FINAL_TOOL = "final_answer"
"""The tool models of ``output_mode="tool"`` answer through (its arguments are the answer)."""

WRAP_KEY = "value"


class OutputSpec:
    """The schema, wire fields and validation for one output type."""

    def __init__(self, output_type: Any) -> None:
        import pydantic

        self.type = output_type
        try:
            self.adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(output_type)
            schema = self.adapter.json_schema()
        except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError) as exc:
            raise ConfigError(f"output_type {output_type!r} has no JSON schema: {exc}") from None
        self.name = _type_name(output_type)
        root = schema
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):  # a recursive model
            root = schema.get("$defs", {}).get(ref[len("#/$defs/") :], {})
        self.wrapped = root.get("type") != "object"
        if not self.wrapped and root is not schema:  # the root itself, keeping $defs for refs
            schema = {**root, "$defs": schema["$defs"]}
        if self.wrapped:
            defs = schema.pop("$defs", None)
            schema = {"type": "object", "properties": {WRAP_KEY: schema}, "required": [WRAP_KEY]}
            if defs:
                schema["$defs"] = defs
        self.schema = schema

    # -- the request -----------------------------------------------------------------

    def prepare(self, request: ModelRequest, provider: Provider, *, forced: bool) -> ModelRequest:
        """``request`` with the structured-output fields ``provider`` declares added."""
        extra = dict(request.extra)
        tools = list(request.tools)
        system = request.system
        declared = capabilities(provider)
        mode = declared.output_mode
        if mode == "native" and request.tools and not declared.native_output_with_tools:
            mode = "prompt"
        if mode == "prompt":
            system = _join(system, self.instruction())
        elif not isinstance(provider, StructuredOutput):
            raise ConfigError(
                f"{type(provider).__name__} declares output_mode={mode!r} but has no "
                "native_output()/choose_tool() (see nbagent.providers.StructuredOutput)"
            )
        elif mode == "native":
            extra = provider.native_output(extra, self.schema, self.name)
        else:
            tools.append(self.final_tool())
            if forced:  # tools are forbidden now, except the one that gives the answer
                extra.update(provider.choose_tool(FINAL_TOOL))
            system = _join(system, f"When you have the answer, give it by calling {FINAL_TOOL}.")
        return dataclasses.replace(request, extra=extra, tools=tools, system=system)

    def final_tool(self) -> ToolSpec:
        """The tool whose arguments are the answer (for APIs without structured output)."""
        return ToolSpec(FINAL_TOOL, f"Give the final answer as {self.name}.", self.schema)

    def instruction(self) -> str:
        """Telling the model the schema in words (providers without structured output)."""
        return (
            "Answer with one JSON value and nothing else, matching this JSON schema:\n"
            + json.dumps(self.schema, ensure_ascii=False)
        )

    # -- the answer -----------------------------------------------------------------

    def take_answer(self, calls: list[ToolCall]) -> tuple[list[ToolCall], str | None]:
        """Split a ``final_answer`` call off the calls: (other calls, its arguments as JSON)."""
        for call in calls:
            if call.name == FINAL_TOOL:
                text = call.raw_arguments or json.dumps(call.arguments, ensure_ascii=False)
                return [], text
        return calls, None

    def validate(self, text: str) -> tuple[Any, str | None]:
        """(the validated value, None) or (None, what is wrong, for the model to fix)."""
        import pydantic

        try:
            data = json.loads(_strip_fence(text))
        except ValueError as exc:
            return None, f"The answer is not valid JSON ({exc})."
        candidates = [data]
        if self.wrapped and isinstance(data, dict) and WRAP_KEY in data:
            candidates.insert(0, data[WRAP_KEY])
        error: pydantic.ValidationError | None = None
        for candidate in candidates:
            try:
                return self.adapter.validate_python(candidate), None
            except pydantic.ValidationError as exc:
                error = error or exc
        assert error is not None
        lines = [
            f"- {'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
            for e in error.errors()[:20]
        ]
        return None, "The answer does not match the schema:\n" + "\n".join(lines)

    def feedback(self, error: str, provider: Provider) -> str:
        """The user message that sends a failed answer back to the model."""
        answers_by_tool = capabilities(provider).output_mode == "tool"
        how = f"Call {FINAL_TOOL} again" if answers_by_tool else "Answer again"
        return f"{error}\n{how} with a corrected {self.name}, as JSON matching the schema."

    def dump(self, value: Any) -> Any:
        """The value as plain Python data (dicts, lists) for JSON and DataFrames."""
        return self.adapter.dump_python(value, mode="json")


def _type_name(output_type: Any) -> str:
    """``City``, ``list_City``, ``dict_str_int``: a readable name for schemas and messages."""
    import typing

    origin, args = typing.get_origin(output_type), typing.get_args(output_type)
    if origin is not None and args:
        inner = "_".join(_type_name(a) for a in args)
        return f"{_type_name(origin)}_{inner}"
    name = getattr(output_type, "__name__", None)
    if name:
        return str(name)
    return re.sub(r"[^A-Za-z0-9_]+", "_", repr(output_type)).strip("_") or "output"


def _join(system: str | None, text: str) -> str:
    return f"{system}\n\n{text}" if system else text


def _strip_fence(text: str) -> str:
    """The JSON inside a Markdown code fence, if the model wrapped it in one."""
    match = re.fullmatch(r"\s*```[A-Za-z]*\s*\n(.*)\n\s*```\s*", text, re.DOTALL)
    return match.group(1) if match else text
