"""Constrained writing of a tool call: a grammar of the tool's JSON schema.

The call is prefilled up to ``"arguments":`` and the rest is decoded under
:func:`arguments_grammar` (llama.cpp's llguidance form: ``%json`` of the schema,
then the call's closing brace), so it is valid JSON matching the schema unless
the token limit cuts it off (:func:`parse_call` then returns None).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ...messages import ToolCall, ToolSpec, new_id

# Compact JSON in the prompt's own spacing: with free whitespace a small greedy model
# can pad with spaces and newlines until the token limit.
_STYLE = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
# Strings without braces or control characters: a small model tends to "close" its
# call inside a string (`"France}}`) and then runs on until the token limit; without
# braces in strings it closes the quote instead. Tool arguments rarely need braces.
_PLAIN_STRING = "^[^{}\\x00-\\x1f]*$"
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:[.,]\d+)?(?=(?:st|nd|rd|th)?(?!\w))")
# Parameters whose value is written rather than quoted (code, a message): not limited
# to spans of the request.
_FREE_TEXT = re.compile(r"code|expr|script|source|sql|body|content|prompt")
_MAX_SPAN_WORDS = 40


def request_numbers(text: str) -> list[float | int]:
    """The numbers written in ``text``, in order (``1,5`` read as 1.5; no duplicates)."""
    out: list[float | int] = []
    for match in _NUMBER.finditer(text):
        raw = match.group(0).replace(",", ".")
        value: float | int = float(raw) if "." in raw else int(raw)
        if value not in out:
            out.append(value)
    return out


def request_spans(text: str, limit: int = 6) -> list[str]:
    """Runs of up to ``limit`` consecutive words of ``text``, longest first, no punctuation."""
    tokens = re.findall(r"[^\W_][\w.'&+-]*[^\W_]|[^\W_]", text)
    tokens = [t.rstrip(".") for t in tokens]
    spans: list[str] = []
    for size in range(min(limit, len(tokens)), 0, -1):
        for start in range(len(tokens) - size + 1):
            span = " ".join(tokens[start : start + size])
            if span not in spans:
                spans.append(span)
    return spans


def constrained_schema(spec: ToolSpec, request_text: str = "") -> dict[str, Any]:
    """The tool's schema with the decoding limits above.

    Number and integer parameters may only take a number written in the request
    (when it has any): a small model copies the user's figures far better than it
    writes them, and an invented figure is worse than an error. Likewise a short
    string parameter (a city, a name, a symbol) may only take a run of the request's
    words: otherwise the model copies the examples of its prompt ("e.g. Berlin").
    """
    schema = json.loads(json.dumps(spec.parameters or {}))
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    numbers = request_numbers(request_text)
    for name, prop in schema["properties"].items():
        if not isinstance(prop, dict) or "enum" in prop or "const" in prop:
            continue
        kind = prop.get("type")
        if kind == "string" and "pattern" not in prop and "format" not in prop:
            spans = request_spans(request_text)
            free = _FREE_TEXT.search(name.lower())
            words = len(request_text.split())
            if spans and not free and words <= _MAX_SPAN_WORDS:
                prop["enum"] = spans
            else:
                prop["pattern"] = _PLAIN_STRING
        elif kind in ("number", "integer") and numbers:
            allowed = [n for n in numbers if kind == "number" or float(n).is_integer()]
            if allowed:
                prop["enum"] = [int(n) if kind == "integer" else n for n in allowed]
    _narrow_enums(schema, request_text)
    schema["x-guidance"] = _STYLE
    return dict(schema)


def _mentions(value: str, word: str, marked: bool) -> bool:
    """Does ``word`` of the request name the enum ``value`` ("mi" in "miles", "C" in "Celsius")?

    A one-letter value only counts in a ``marked`` word: capitalised mid-sentence
    ("Celsius") or right after a number ("100 metres").
    """
    v, w = value.lower(), word.lower()
    if v == w or (len(v) > 2 and w.startswith(v)):
        return True
    if len(v) == 1:
        return marked and len(w) >= 4 and w[0] == v
    # an abbreviation: same first letter, its letters in order ("ft" in "feet", "km")
    it = iter(w)
    return len(w) >= 4 and w[0] == v[0] and all(ch in it for ch in v)


def mentioned(values: list[str], text: str) -> list[tuple[str, bool]]:
    """The enum values the request names, in order, each with "right after a number"."""
    tokens = re.findall(r"[^\W_]+|\d+(?:[.,]\d+)?", text)
    out: list[tuple[str, bool]] = []
    for index, word in enumerate(tokens):
        if word[0].isdigit():
            continue
        after_number = any(t[0].isdigit() for t in tokens[max(0, index - 2) : index])
        marked = after_number or (index > 0 and word[0].isupper())
        matching = [v for v in values if _mentions(v, word, marked)]
        if not matching:
            continue
        best = max(matching, key=len)  # "mi" over "m" for "miles"
        out.append((best, after_number))
    return out


def _narrow_enums(schema: dict[str, Any], text: str) -> None:
    """Limit string enums to the values the request names.

    One parameter: the named value(s). A "from"/"to" pair over the same values: the
    value written right after the number (or named first) is the source, the others
    the target. An optional enum the request does not name keeps its default.
    """
    required = set(schema.get("required") or [])
    for name, prop in schema["properties"].items():
        values = prop.get("enum") if isinstance(prop, dict) else None
        if not values or not all(isinstance(v, str) for v in values):
            continue
        found = mentioned(values, text)
        if not found:
            if name not in required and prop.get("default") in values:
                prop["enum"] = [prop["default"]]
            continue
        names = {v for v, _ in found}
        source = next((v for v, after in found if after), found[0][0])
        key = name.lower()
        if re.search(r"(^|_)(to|target|into|dest)", key):
            keep = [v for v in names if v != source] or list(names)
        elif re.search(r"(^|_)(from|source|src)", key):
            keep = [source]
        else:
            keep = list(names)
        prop["enum"] = [v for v in values if v in keep]


def arguments_grammar(spec: ToolSpec, request_text: str = "") -> str:
    """The grammar of the call's arguments: a JSON object matching the schema, then "}"."""
    schema = json.dumps(constrained_schema(spec, request_text))
    return f'%llguidance {{}}\nstart: args "}}"\nargs: %json {schema}\n'


def parse_call(name: str, arguments_text: str) -> ToolCall | None:
    """The grammar guarantees valid JSON unless generation hit the token limit."""
    raw = arguments_text.strip()
    raw = raw[:-1] if raw.endswith("}") else raw  # the grammar's closing brace of the call
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError:
        return None
    if not isinstance(arguments, dict):
        return None
    return ToolCall(id=new_id("call_"), name=name, arguments=arguments, raw_arguments=raw)
