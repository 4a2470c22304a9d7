"""JSON schemas from Python signatures and docstrings; argument validation and repair."""

from __future__ import annotations

import ast
import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_type_hints

import pydantic


class ArgumentError(ValueError):
    """The model's arguments do not fit the tool's signature; the text says which and why."""


@dataclass
class FunctionSchema:
    description: str
    parameters: dict[str, Any]
    validator: type[pydantic.BaseModel]


def function_schema(fn: Callable[..., Any]) -> FunctionSchema:
    """Description, JSON schema and a pydantic validator for ``fn``'s parameters."""
    import docstring_parser

    doc = docstring_parser.parse(inspect.getdoc(fn) or "")
    param_docs = {p.arg_name: (p.description or "") for p in doc.params}
    signature = inspect.signature(fn)
    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception:  # unresolvable forward references: fall back to raw annotations
        hints = {}
    fields: dict[str, Any] = {}
    for name, param in signature.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or name in ("self", "cls"):
            continue
        annotation = hints.get(name, param.annotation)
        if annotation is inspect.Parameter.empty:
            annotation = Any
        default = ... if param.default is inspect.Parameter.empty else param.default
        description = param_docs.get(name) or None
        fields[name] = (annotation, pydantic.Field(default, description=description))
    model = pydantic.create_model(  # type: ignore[call-overload]
        f"{getattr(fn, '__name__', 'tool')}_arguments",
        __config__=pydantic.ConfigDict(extra="forbid"),
        **fields,
    )
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema.setdefault("properties", {})
    description = "\n\n".join(x for x in (doc.short_description, doc.long_description) if x)
    return FunctionSchema(description, schema, model)


def parse_raw_arguments(raw: str) -> dict[str, Any]:
    """Parse argument text, repairing common damage once (fences, trailing commas, quotes)."""
    text = raw.strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = _repair(text)
    if not isinstance(value, dict):
        raise ArgumentError(f"arguments must be a JSON object, got {type(value).__name__}")
    return value


def _repair(text: str) -> Any:
    fenced = re.match(r"^```[a-zA-Z]*\s*(.*?)\s*```$", text, re.S)
    if fenced:
        text = fenced.group(1)
    text = re.sub(r",\s*([}\]])", r"\1", text)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:  # single quotes, Python literals (True/None)
        return ast.literal_eval(text)
    except (ValueError, SyntaxError) as exc:
        raise ArgumentError(f"arguments are not valid JSON: {text[:200]!r}") from exc


def validate_arguments(
    validator: type[pydantic.BaseModel], arguments: dict[str, Any], raw: str | None
) -> dict[str, Any]:
    """Validated keyword arguments, coercing numbers/booleans sent as strings."""
    if raw is not None and not arguments:
        arguments = parse_raw_arguments(raw)
    try:
        model = validator.model_validate(arguments)
    except pydantic.ValidationError as exc:
        raise ArgumentError(_explain(exc)) from None
    return {name: getattr(model, name) for name in type(model).model_fields}


def _explain(exc: pydantic.ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(x) for x in error["loc"]) or "(arguments)"
        parts.append(f"argument {where!r}: {error['msg']}")
    return "; ".join(parts)
