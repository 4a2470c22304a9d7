"""Comparing tool schemas written by different generators."""

from __future__ import annotations

from typing import Any


def clean_schema(schema: Any) -> Any:
    """``schema`` without what differs harmlessly between generators.

    Titles, ``additionalProperties: false`` and empty required lists go; type names
    are lower-cased.
    """
    if isinstance(schema, list):
        return [clean_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key in ("title", "$schema") or (key == "additionalProperties" and value is False):
            continue
        if key == "required" and not value:
            continue
        if key == "properties":
            out[key] = {name: clean_schema(s) for name, s in value.items()}
        elif key == "type" and isinstance(value, str):
            out[key] = value.lower()
        else:
            out[key] = clean_schema(value)
    if out.get("type") == "object" and not out.get("properties"):
        out.pop("properties", None)
    return out
