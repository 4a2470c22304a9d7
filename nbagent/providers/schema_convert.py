"""Tool schema and tool name conversion for APIs that accept less than JSON Schema.

nbagent builds tool schemas with pydantic (``nbagent._schema``): ``$defs``/``$ref`` for
nested models, ``anyOf [X, null]`` for optionals, ``const`` for one-value literals,
``additionalProperties``, ``prefixItems`` for tuples, formats like ``uuid``. Gemini's
``parameters`` take an OpenAPI 3.0 subset (WIRE_FORMATS section 3), so
:func:`to_gemini_schema` rewrites a schema into that subset without losing what the
model needs to know: constraints Gemini cannot express move into the description.

:class:`NameMap` makes any tool name legal for an API and maps the model's calls back.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

# Keys of Gemini's Schema object we keep (everything else is dropped or rewritten).
_GEMINI_KEYS = {
    "type", "format", "description", "nullable", "enum", "properties", "required",
    "items", "anyOf", "minItems", "maxItems", "minimum", "maximum", "minLength",
    "maxLength", "pattern", "minProperties", "maxProperties", "propertyOrdering", "title",
}  # fmt: skip

# Gemini rejects other formats ("only 'enum' and 'date-time' are supported for STRING").
_GEMINI_FORMATS = {
    "STRING": {"enum", "date-time"},
    "INTEGER": {"int32", "int64"},
    "NUMBER": {"float", "double"},
}


def to_gemini_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The Gemini ``parameters`` equivalent of a JSON schema (the input is not modified)."""
    defs: dict[str, Any] = {}
    defs.update(schema.get("definitions") or {})
    defs.update(schema.get("$defs") or {})
    out = _convert(copy.deepcopy(schema), defs, ())
    if out.get("type") != "OBJECT":
        # Parameters must be an object; a non-object root cannot describe keyword arguments.
        out = {"type": "OBJECT", "description": out.get("description", "")}
    return out


Refs = tuple[str, ...]  # the $ref names being expanded on the current path (recursion guard)


def _convert(node: Any, defs: dict[str, Any], refs: Refs) -> dict[str, Any]:
    if not isinstance(node, dict):
        return {}
    node, refs = _resolve(node, defs, refs)
    notes: list[str] = []

    # allOf: merge every member into one schema (pydantic wraps a $ref this way).
    if "allOf" in node:
        members = [m for m in node.pop("allOf") if isinstance(m, dict)]
        resolved = []
        for member in members:
            member, refs = _resolve(member, defs, refs)
            resolved.append(member)
        node = _merge([node, *resolved])

    if "oneOf" in node:
        node["anyOf"] = node.pop("oneOf") + node.get("anyOf", [])

    nullable = False
    type_value = node.get("type")
    if isinstance(type_value, list):
        types = [t for t in type_value if t != "null"]
        nullable = len(types) < len(type_value)
        if len(types) == 1:
            node["type"] = types[0]
        elif types:
            del node["type"]
            node["anyOf"] = [{"type": t} for t in types] + node.get("anyOf", [])
        else:
            node["type"] = "null"

    out: dict[str, Any] = {}
    if "anyOf" in node:
        members = []
        member_refs = refs
        for member in node.pop("anyOf"):
            if not isinstance(member, dict):
                continue
            if member.get("type") == "null" or member.get("enum") == [None]:
                nullable = True
                continue
            members.append(member)
        if len(members) == 1:
            # Optional[X]: X itself, made nullable; the outer description wins.
            member, member_refs = _resolve(members[0], defs, refs)
            node = _merge([node, member])
            refs = member_refs
        elif members:
            out["anyOf"] = [_convert(m, defs, refs) for m in members]

    if node.get("type") == "null":
        # A schema that only allows null: Gemini has no such type; say it in words.
        description = _join(node.get("description"), "always null")
        return {"type": "STRING", "nullable": True, "description": description}

    if "const" in node:
        node["enum"] = [node.pop("const")]
    if "enum" in node:
        raw_values = list(node.pop("enum"))
        values = [v for v in raw_values if v is not None]
        nullable = nullable or len(values) < len(raw_values)
        if values and all(isinstance(v, str) for v in values):
            out["enum"] = values
            node.setdefault("type", "string")
        elif values:
            # Gemini enums hold strings only; keep the type and state the allowed values.
            notes.append("one of " + ", ".join(json.dumps(v) for v in values))
            node.setdefault("type", _json_type(values[0]))

    type_name = node.get("type")
    if isinstance(type_name, str):
        out["type"] = type_name.upper()
    elif "properties" in node:
        out["type"] = "OBJECT"

    if out.get("type") == "OBJECT":
        properties = node.get("properties") or {}
        if properties:  # older Gemini models reject an OBJECT with empty properties
            out["properties"] = {n: _convert(p, defs, refs) for n, p in properties.items()}
        required = [r for r in node.get("required", []) if r in properties]
        if required:
            out["required"] = required
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and not properties:
            notes.append("an object mapping names to " + _short(extra))

    if out.get("type") == "ARRAY":
        items = node.get("items")
        prefix = node.get("prefixItems")
        if isinstance(prefix, list) and prefix:
            converted = [_convert(p, defs, refs) for p in prefix]
            unique = {json.dumps(c, sort_keys=True) for c in converted}
            out["items"] = converted[0] if len(unique) == 1 else {"anyOf": converted}
            kinds = ", ".join(_short(p) for p in prefix)
            notes.append(f"exactly {len(prefix)} items, in this order: {kinds}")
        elif isinstance(items, dict):
            out["items"] = _convert(items, defs, refs)
        else:
            out["items"] = {"type": "STRING"}
            notes.append("items of any type")
        if node.get("uniqueItems"):
            notes.append("items must be unique")

    fmt = node.get("format")
    if isinstance(fmt, str):
        if fmt in _GEMINI_FORMATS.get(out.get("type", ""), set()):
            out["format"] = fmt
        else:
            notes.append(f"format: {fmt}")

    for key, word in (("exclusiveMinimum", "greater than"), ("exclusiveMaximum", "less than")):
        value = node.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            notes.append(f"{word} {value}")
    if "multipleOf" in node:
        notes.append(f"a multiple of {node['multipleOf']}")
    if "default" in node:
        notes.append("default: " + json.dumps(node["default"], default=str))

    for key in _GEMINI_KEYS:
        if key in node and key not in out and key not in _HANDLED:
            out[key] = node[key]
    description = _join(node.get("description"), "; ".join(notes))
    if description:
        out["description"] = description
    if nullable:
        out["nullable"] = True
    if "type" not in out and "anyOf" not in out:
        # Anything goes (``Any``): Gemini needs a type, and any value can be written as text.
        out["type"] = "STRING"
    return out


_HANDLED = {"type", "format", "enum", "properties", "required", "items", "anyOf", "description"}


def _resolve(node: dict[str, Any], defs: dict[str, Any], refs: Refs) -> tuple[dict[str, Any], Refs]:
    """Inline ``$ref`` (siblings such as a description win over the target's).

    A model that refers to itself is expanded once; below that it becomes a free object.
    """
    while "$ref" in node:
        ref = node["$ref"]
        name = ref.rsplit("/", 1)[-1] if isinstance(ref, str) else ""
        rest = {k: v for k, v in node.items() if k != "$ref"}
        target = defs.get(name)
        if target is None or name in refs:
            text = f"a {name} object" if target is not None else f"unresolvable reference {ref}"
            free = {"type": "object", **rest}
            free["description"] = _join(rest.get("description"), text)
            return free, refs
        node = {**copy.deepcopy(target), **rest}
        refs = (*refs, name)
    return node, refs


def _merge(members: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for member in members:
        for key, value in member.items():
            if key == "properties":
                merged.setdefault("properties", {}).update(value)
            elif key == "required":
                merged["required"] = list(dict.fromkeys([*merged.get("required", []), *value]))
            elif key == "description" and "description" in merged:
                merged["description"] = _join(merged["description"], value)
            else:
                merged.setdefault(key, value)
    return merged


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"


def _short(schema: Any) -> str:
    if isinstance(schema, dict):
        t = schema.get("type")
        if isinstance(t, str):
            return t
        if "$ref" in schema:
            return str(schema["$ref"]).rsplit("/", 1)[-1]
    return "any value"


def _join(*parts: Any) -> str:
    texts = [str(p).strip() for p in parts if p and str(p).strip()]
    if len(texts) == 2:
        return f"{texts[0]} ({texts[1]})"
    return " ".join(texts)


# --- tool names ------------------------------------------------------------------


class NameMap:
    """Legal wire names for tool names, and the way back.

    ``pattern`` is the API's allowed characters; names that already fit are kept as
    they are (the common case), others get illegal characters replaced and, when two
    names collide, a numeric suffix.
    """

    def __init__(
        self, names: list[str], *, allowed: str, max_len: int, first: str | None = None
    ) -> None:
        self.to_wire: dict[str, str] = {}
        self.from_wire: dict[str, str] = {}
        self._bad = re.compile(f"[^{allowed}]")
        self._first = re.compile(f"[{first}]") if first else None
        self._max_len = max_len
        for name in names:
            self.wire(name)

    def wire(self, name: str) -> str:
        """The legal name for ``name`` (history may name tools no longer offered)."""
        if name in self.to_wire:
            return self.to_wire[name]
        wire = self._bad.sub("_", name)[: self._max_len] or "tool"
        if self._first is not None and not self._first.match(wire):
            wire = ("_" + wire)[: self._max_len]
        base, n = wire, 2
        while wire in self.from_wire:
            suffix = f"_{n}"
            wire = base[: self._max_len - len(suffix)] + suffix
            n += 1
        self.to_wire[name] = wire
        self.from_wire[wire] = name
        return wire

    def real(self, wire_name: str) -> str:
        """The tool's own name for a name the model used on the wire."""
        return self.from_wire.get(wire_name, wire_name)
