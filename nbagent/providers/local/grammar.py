"""Constrained writing of a tool call: a GBNF grammar of the tool's JSON schema.

The call is prefilled up to ``"arguments":`` and the rest is decoded under
:func:`arguments_grammar`, so it is valid JSON matching the schema unless the token
limit cuts it off (:func:`parse_call` then returns None).
"""

from __future__ import annotations

import json
from typing import Any

from ...messages import ToolCall, ToolSpec, new_id


def arguments_grammar(spec: ToolSpec) -> str:
    """GBNF for the call's arguments: a JSON object matching the tool's schema, then "}"."""
    from llama_cpp import llama_grammar

    # llama-cpp-python's converter is untyped; its private rule table is the only way
    # to change two rules (see below).
    make_converter: Any = llama_grammar.SchemaConverter
    converter = make_converter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
    # One optional space between tokens: with the default rule (any run of spaces and
    # newlines) a small greedy model can pad with whitespace until the token limit.
    converter._rules["space"] = '" "?'
    # Strings: no raw control characters (JSON forbids them; the stock rule allows
    # them) and no braces. A small model tends to "close" its call inside a string
    # (`"France}}`) and then runs on until the token limit; without braces in
    # strings it closes the quote instead. Tool arguments rarely need braces.
    converter._rules["char"] = (
        '[^"\\\\{}\\x00-\\x1f] | "\\\\" (["\\\\/bfnrt] | "u" '
        "[0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])"
    )
    schema = dict(spec.parameters or {})
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    schema = converter.resolve_refs(schema, spec.name)
    args_rule = converter.visit(schema, "args")
    rules: str = converter.format_grammar()
    return f'root ::= {args_rule} "}}"\n' + rules + "\n"


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
