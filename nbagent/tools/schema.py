"""JSON schemas from Python signatures and docstrings; argument validation and repair.

pydantic does the heavy lifting: each tool gets a pydantic model built from its
parameters, whose JSON schema is what the model is told and whose validation
checks (and coerces) what the model sends back.
"""

from __future__ import annotations

import ast
import functools
import inspect
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_type_hints

import pydantic
import pydantic_core

logger = logging.getLogger("nbagent")


class ArgumentError(ValueError):
    """The model's arguments do not fit the tool's signature; the text says which and why."""


@dataclass
class FunctionSchema:
    """What a function offers the model: description, JSON schema, argument validator."""

    description: str
    parameters: dict[str, Any]
    validator: type[pydantic.BaseModel]
    undescribed: list[str]
    """Parameters with no type hint, no typed default and no docstring entry: the model
    is told nothing about them."""


def unwrap(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The plain function behind partials, bound methods and callable objects.

    Docstrings and type hints live there (``inspect.getdoc`` of a partial is the
    docstring of ``functools.partial`` itself).
    """
    while True:
        if isinstance(fn, functools.partial):
            fn = fn.func
        elif inspect.ismethod(fn):
            fn = fn.__func__
        elif not inspect.isroutine(fn) and not inspect.isclass(fn) and callable(fn):
            fn = type(fn).__call__
        else:
            return fn


def function_schema(fn: Callable[..., Any], *, name: str = "tool") -> FunctionSchema:
    """Description, JSON schema and a pydantic validator for ``fn``'s parameters.

    Raises:
        TypeError: a parameter's type cannot be sent as JSON (a DataFrame, say);
            the message names the parameter.
    """
    import docstring_parser

    target = unwrap(fn)
    doc = docstring_parser.parse(inspect.getdoc(target) or "")
    param_docs = {p.arg_name.lstrip("*"): (p.description or "") for p in doc.params}
    hints = _type_hints(target)
    fields: dict[str, Any] = {}
    undescribed: list[str] = []
    for pname, param in _model_parameters(fn).items():
        annotation = hints.get(pname, param.annotation)
        if annotation is inspect.Parameter.empty:
            # No hint: a default still says what kind of value is expected.
            no_default = param.default in (inspect.Parameter.empty, None)
            annotation = Any if no_default else type(param.default)
            if no_default and not param_docs.get(pname):
                undescribed.append(pname)
        default = ... if param.default is inspect.Parameter.empty else param.default
        # Only pass what is known, so an Annotated[..., Field(description=...)] survives.
        text = param_docs.get(pname)
        info = pydantic.Field(default, description=text) if text else pydantic.Field(default)
        fields[pname] = (annotation, info)
    try:
        model = pydantic.create_model(
            f"{name}_arguments",
            __config__=pydantic.ConfigDict(extra="forbid"),
            **fields,
        )
        schema = model.model_json_schema()
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError):
        # The message names the parameter and the fix; pydantic's own chain adds nothing.
        raise TypeError(_unsupported_message(name, fields)) from None
    except pydantic_core.PydanticSerializationError as exc:  # a default that is not JSON
        raise TypeError(f"tool {name!r}: a default value cannot be sent as JSON: {exc}") from None
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema.setdefault("properties", {})
    description = "\n\n".join(x for x in (doc.short_description, doc.long_description) if x)
    return FunctionSchema(description, schema, model, undescribed)


def _type_hints(target: Callable[..., Any]) -> dict[str, Any]:
    """Resolved annotations; with one unresolvable name, the others still resolve."""
    try:
        return get_type_hints(target, include_extras=True)
    except Exception:
        pass
    hints: dict[str, Any] = {}
    namespace = getattr(target, "__globals__", {})
    for pname, annotation in getattr(target, "__annotations__", {}).items():
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, namespace)  # what get_type_hints does too
            except Exception:
                pass  # left as text; reported with the parameter's name below
        hints[pname] = annotation
    return hints


def _model_parameters(fn: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    """The parameters a model may fill in.

    Skips ``*args``/``**kwargs``, the ``self``/``cls`` of an unbound method, and
    keywords a ``functools.partial`` already fixed (the user chose those values).
    """
    signature = inspect.signature(fn)
    fixed = set(fn.keywords) if isinstance(fn, functools.partial) else set()
    out = {}
    for index, (pname, param) in enumerate(signature.parameters.items()):
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or pname in fixed:
            continue
        if index == 0 and pname in ("self", "cls"):
            continue
        out[pname] = param
    return out


def _unsupported_message(name: str, fields: dict[str, Any]) -> str:
    for pname, (annotation, _field) in fields.items():
        if isinstance(annotation, str):
            return (
                f"tool {name!r}: the annotation {annotation!r} of parameter {pname!r} cannot "
                "be resolved (a class defined inside a function, with postponed annotations?). "
                "Define the type at module level."
            )
        try:
            pydantic.TypeAdapter(annotation).json_schema()
        except Exception:
            kind = getattr(annotation, "__name__", repr(annotation))
            return (
                f"tool {name!r}: parameter {pname!r} has type {kind}, which a model cannot "
                "send as JSON. Use JSON-friendly types (str, int, float, bool, list, dict, "
                "Literal, Enum, dataclasses, pydantic models), e.g. pass a name and look "
                "the object up inside the tool."
            )
    return f"tool {name!r}: cannot build a JSON schema for its parameters"


# --- parsing and repair --------------------------------------------------------


def parse_raw_arguments(raw: str) -> dict[str, Any]:
    """Parse argument text, repairing common damage once (fences, trailing commas, quotes)."""
    text = raw.strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        value = _repair_json(text, exc)
    if not isinstance(value, dict):
        raise ArgumentError(
            f"the arguments must be a JSON object with one key per parameter, "
            f"got {type(value).__name__}: {text[:200]}"
        )
    return value


def _repair_json(text: str, first_error: json.JSONDecodeError) -> Any:
    """One repair attempt: strip code fences, drop trailing commas, accept single quotes.

    What was repaired is logged at info level (``NBAGENT_LOG=info`` shows it).
    """
    original = text
    repairs = []
    fenced = re.match(r"^```[\w-]*\s*(.*?)\s*```$", text, re.S)
    if fenced:
        text = fenced.group(1)
        repairs.append("code fence removed")
    unfenced = text
    text = re.sub(r",\s*([}\]])", r"\1", text)
    if text != unfenced:
        repairs.append("trailing comma removed")
    try:
        return _repaired(json.loads(text), repairs, original)
    except json.JSONDecodeError:
        pass
    try:  # single quotes and Python literals (True/False/None), without eval
        return _repaired(ast.literal_eval(text), [*repairs, "Python literal read"], original)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        pass
    try:  # single quotes mixed with JSON literals: {'a': true}
        return _repaired(json.loads(_requote(text)), [*repairs, "single quotes"], original)
    except json.JSONDecodeError:
        raise ArgumentError(
            f"the arguments are not valid JSON ({first_error.msg} at position "
            f"{first_error.pos}): {text[:200]}"
        ) from None


def _repaired(value: Any, repairs: list[str], original: str) -> Any:
    logger.info("tool arguments repaired (%s): %s", ", ".join(repairs), original[:200])
    return value


def _requote(text: str) -> str:
    """Single-quoted strings as double-quoted JSON strings (escapes kept, ``"`` escaped)."""
    out: list[str] = []
    quote: str | None = None
    index = 0
    while index < len(text):
        char = text[index]
        if quote is None:
            if char in "'\"":
                quote = char
                char = '"'
        elif char == "\\" and index + 1 < len(text):
            following = text[index + 1]
            out.append("'" if following == "'" else char + following)
            index += 2
            continue
        elif char == quote:
            quote = None
            char = '"'
        elif char == '"':
            char = '\\"'
        out.append(char)
        index += 1
    return "".join(out)


def validate_arguments(
    validator: type[pydantic.BaseModel], arguments: dict[str, Any], raw: str | None
) -> dict[str, Any]:
    """Validated keyword arguments.

    pydantic's lax mode already accepts numbers and booleans sent as strings
    ("5", "true"). When validation still fails, one repair is tried: string
    values that hold JSON ("[1, 2]", "null", "{...}") are decoded. If that does
    not help either, the error names each wrong argument and says why.
    """
    if raw is not None and not arguments:
        arguments = parse_raw_arguments(raw)
    try:
        model = validator.model_validate(arguments)
    except pydantic.ValidationError as exc:
        repaired = _repair_values(arguments, exc)
        if repaired is None:
            raise ArgumentError(_explain(exc, validator)) from None
        try:
            model = validator.model_validate(repaired)
        except pydantic.ValidationError:
            raise ArgumentError(_explain(exc, validator)) from None
    # Attribute access keeps nested values as the types the function declared
    # (dataclass / pydantic instances, Enum members), where model_dump would not.
    return {name: getattr(model, name) for name in type(model).model_fields}


def _repair_values(
    arguments: dict[str, Any], exc: pydantic.ValidationError
) -> dict[str, Any] | None:
    repaired = dict(arguments)
    changed = False
    for error in exc.errors():
        key = error["loc"][0] if error["loc"] else None
        value = arguments.get(key) if isinstance(key, str) else None
        if not isinstance(value, str):
            continue
        text = value.strip()
        lowered = text.lower()
        if lowered in ("none", "null"):
            repaired[key] = None  # type: ignore[index]
            changed = True
            continue
        try:
            repaired[key] = json.loads(text)  # type: ignore[index]
            changed = True
        except json.JSONDecodeError:
            try:
                repaired[key] = ast.literal_eval(text)  # type: ignore[index]
                changed = True
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                continue
    if changed:
        fixed = sorted(k for k in repaired if repaired[k] is not arguments.get(k))
        logger.info("tool arguments repaired (JSON text in %s decoded)", ", ".join(fixed))
    return repaired if changed else None


def _explain(exc: pydantic.ValidationError, validator: type[pydantic.BaseModel]) -> str:
    parts = []
    for error in exc.errors(include_url=False):
        loc = error["loc"]
        where = ".".join(str(x) for x in loc) or "(arguments)"
        if error["type"] == "missing":
            parts.append(f"missing required argument {where!r}")
        elif error["type"] == "extra_forbidden":
            parts.append(f"unexpected argument {where!r}")
        else:
            got = json.dumps(error.get("input"), default=repr, ensure_ascii=False)
            if len(got) > 80:
                got = got[:77] + "..."
            parts.append(f"argument {where!r}: {error['msg']} (got {got})")
    return "; ".join(parts) + ". " + _expected(validator)


def _expected(validator: type[pydantic.BaseModel]) -> str:
    fields = validator.model_fields
    if not fields:
        return "This tool takes no arguments."
    described = []
    for name, field in fields.items():
        kind = _type_name(field.annotation)
        described.append(f"{name} ({kind}{', required' if field.is_required() else ''})")
    return "Expected arguments: " + ", ".join(described) + "."


def _type_name(annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) if isinstance(annotation, type) else None
    return text or repr(annotation).replace("typing.", "")
