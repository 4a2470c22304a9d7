"""Helpers for replaying the Anthropic and Gemini cassettes (used by test_anthropic*/test_gemini*).

* :func:`make_tool` builds a real nbagent Tool with the recorded name, description and
  parameters (a generated Python function, so nbagent's own schema generation runs)
  that returns the recorded results for the recorded arguments.
* ``recorded_*`` read what the recording says: the tool exchanges, the final text.
* ``normalize_*`` reduce a request body to what must be equivalent between the
  recorded request and ours: roles, texts, call ids, calls, results, thinking
  blocks / signatures and tool declarations, up to key order and spelling
  (``function_call`` vs ``functionCall``, ``STRING`` vs ``string``, titles).
"""

from __future__ import annotations

import base64
import json
from collections import defaultdict, deque
from typing import Any

from nbagent import Tool

from .cassettes import Cassette, RecordedResponse

_PY_TYPES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "object": "dict",
}


def _annotation(schema: dict[str, Any]) -> str:
    kind = str(schema.get("type", "string")).lower()
    if kind == "array":
        return f"list[{_annotation(schema.get('items') or {})}]"
    return _PY_TYPES.get(kind, "str")


def _key(name: str, arguments: dict[str, Any]) -> str:
    return name + json.dumps(arguments, sort_keys=True)


class RecordedTools:
    """Tools that answer with the recorded results, in order, per (name, arguments)."""

    def __init__(self) -> None:
        self.results: dict[str, deque[str]] = defaultdict(deque)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def add_result(self, name: str, arguments: dict[str, Any], result: str) -> None:
        self.results[_key(name, arguments)].append(result)

    def lookup(self, name: str, arguments: dict[str, Any]) -> str:
        arguments = {k: v for k, v in arguments.items() if v is not None}
        self.calls.append((name, arguments))
        queue = self.results.get(_key(name, arguments))
        if not queue:
            raise LookupError(f"no recorded result for {name}({arguments})")
        return queue.popleft() if len(queue) > 1 else queue[0]

    def make_tool(self, name: str, description: str | None, schema: dict[str, Any] | None) -> Tool:
        """A Tool whose generated signature matches ``schema`` (a JSON/OpenAPI schema)."""
        schema = schema or {}
        properties = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        params, docs = [], []
        for prop, prop_schema in properties.items():
            annotation = _annotation(prop_schema)
            if prop in required:
                params.append(f"{prop}: {annotation}")
            else:
                params.append(f"{prop}: {annotation} | None = None")
            if prop_schema.get("description"):
                docs.append(f"        {prop}: {prop_schema['description']}")
        doc = ""
        if docs:
            doc = '    """Tool.\n\n    Args:\n' + "\n".join(docs) + '\n    """\n'
        source = (
            f"def {name}({', '.join(params)}):\n{doc}"
            f"    return _lookup({name!r}, dict({', '.join(f'{n}={n}' for n in properties)}))\n"
        )
        namespace: dict[str, Any] = {"_lookup": self.lookup}
        exec(source, namespace)  # noqa: S102 - test helper building a typed function
        return Tool(namespace[name], name=name, description=description or "")


# --------------------------------------------------------------------------- Anthropic


def anthropic_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content or [])


def _result_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return "" if content is None else str(content)


def anthropic_exchanges(body: dict[str, Any]) -> list[tuple[str, dict[str, Any], str]]:
    """(name, input, result) of every tool exchange in a recorded Messages request."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    out = []
    for message in body["messages"]:
        for block in anthropic_blocks(message["content"]):
            if block.get("type") == "tool_use":
                calls[block["id"]] = (block["name"], block.get("input") or {})
            elif block.get("type") == "tool_result":
                name, arguments = calls[block["tool_use_id"]]
                out.append((name, arguments, _result_text(block.get("content"))))
    return out


def anthropic_text(response: RecordedResponse) -> str:
    """The answer text of a recorded Messages response (streamed or not)."""
    if not response.is_stream:
        return "".join(
            b.get("text", "") for b in response.json()["content"] if b.get("type") == "text"
        )
    text = []
    for line in response.text.splitlines():
        if line.startswith("data:"):
            data = json.loads(line[5:])
            delta = data.get("delta") or {}
            if data.get("type") == "content_block_delta" and delta.get("type") == "text_delta":
                text.append(delta["text"])
    return "".join(text)


def _clean_schema(schema: Any) -> Any:
    """Drop what differs harmlessly between generators: titles, additionalProperties false,
    empty required lists; lower-case type names."""
    if isinstance(schema, list):
        return [_clean_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key in ("title", "$schema") or (key == "additionalProperties" and value is False):
            continue
        if key == "required" and not value:
            continue
        if key == "properties":
            out[key] = {name: _clean_schema(s) for name, s in value.items()}
        elif key == "type" and isinstance(value, str):
            out[key] = value.lower()
        else:
            out[key] = _clean_schema(value)
    if out.get("type") == "object" and not out.get("properties"):
        out.pop("properties", None)
    return out


def normalize_anthropic(body: dict[str, Any]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for message in body["messages"]:
        blocks = []
        for block in anthropic_blocks(message["content"]):
            kind = block.get("type")
            if kind == "text":
                if block["text"].strip():
                    blocks.append({"text": block["text"]})
            elif kind == "tool_use":
                blocks.append(
                    {"tool_use": block["id"], "name": block["name"], "input": block.get("input")}
                )
            elif kind == "tool_result":
                blocks.append(
                    {
                        "tool_result": block["tool_use_id"],
                        "content": _result_text(block.get("content")),
                        "is_error": bool(block.get("is_error")),
                    }
                )
            elif kind in ("thinking", "redacted_thinking"):
                blocks.append({k: block.get(k) for k in ("type", "thinking", "signature", "data")})
        if messages and messages[-1]["role"] == message["role"]:
            messages[-1]["blocks"] += blocks  # the API merges same-role turns
        else:
            messages.append({"role": message["role"], "blocks": blocks})
    system = body.get("system")
    if isinstance(system, list):
        system = "".join(b.get("text", "") for b in system)
    tools = sorted(
        (
            {
                "name": t["name"],
                "description": t.get("description") or "",
                "input_schema": _clean_schema(t.get("input_schema")),
            }
            for t in body.get("tools") or []
        ),
        key=lambda t: t["name"],
    )
    return {"system": (system or "").strip() or None, "messages": messages, "tools": tools}


# --------------------------------------------------------------------------- Gemini


def _camel(part: dict[str, Any]) -> dict[str, Any]:
    """proto3 JSON accepts snake_case too (llm-gemini sends ``function_call``)."""
    names = {
        "function_call": "functionCall",
        "function_response": "functionResponse",
        "thought_signature": "thoughtSignature",
    }
    return {names.get(k, k): v for k, v in part.items()}


def _response_value(response: Any) -> Any:
    """``{"output": x}``, ``{"return_value": x}``, ``{"result": x}`` -> x."""
    if isinstance(response, dict) and len(response) == 1:
        return next(iter(response.values()))
    return response


def gemini_exchanges(body: dict[str, Any]) -> list[tuple[str, dict[str, Any], Any]]:
    """(name, args, result) of every function exchange in a recorded request, paired by position."""
    out = []
    pending: list[tuple[str, dict[str, Any]]] = []
    for content in body["contents"]:
        for part in map(_camel, content.get("parts") or []):
            if "functionCall" in part:
                call = part["functionCall"]
                pending.append((call["name"], call.get("args") or {}))
            elif "functionResponse" in part:
                name, args = pending.pop(0)
                out.append((name, args, _response_value(part["functionResponse"].get("response"))))
    return out


def gemini_chunks(response: RecordedResponse) -> list[dict[str, Any]]:
    """The GenerateContentResponse objects of a recorded response (SSE, JSON array or one)."""
    if "event-stream" in response.content_type:
        return [
            json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")
        ]
    data = response.json()
    return data if isinstance(data, list) else [data]


def gemini_text(response: RecordedResponse) -> str:
    text = []
    for chunk in gemini_chunks(response):
        for candidate in chunk.get("candidates") or []:
            for part in (candidate.get("content") or {}).get("parts") or []:
                if "text" in part and not part.get("thought"):
                    text.append(part["text"])
    return "".join(text)


def _signature(value: str | None) -> bytes | None:
    """Signatures compare as bytes: some SDKs re-encode them in URL-safe base64."""
    if value is None:
        return None
    return base64.urlsafe_b64decode(value.replace("+", "-").replace("/", "_") + "==")


def normalize_gemini(body: dict[str, Any]) -> dict[str, Any]:
    contents: list[dict[str, Any]] = []
    for content in body["contents"]:
        parts = []
        for part in map(_camel, content.get("parts") or []):
            if part.get("thought"):
                continue
            item: dict[str, Any] = {}
            if "text" in part:
                if not part["text"] and "thoughtSignature" not in part:
                    continue
                item["text"] = part["text"]
            if "functionCall" in part:
                call = part["functionCall"]
                item["call"] = (call["name"], call.get("args") or {})
            if "functionResponse" in part:
                response = part["functionResponse"]
                item["response"] = (response["name"], _response_value(response.get("response")))
            if "thoughtSignature" in part:
                item["signature"] = _signature(part["thoughtSignature"])
            parts.append(item)
        role = content.get("role", "user")
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"] += parts
        else:
            contents.append({"role": role, "parts": parts})
    system = body.get("systemInstruction") or body.get("system_instruction")
    system_text = "".join(p.get("text", "") for p in (system or {}).get("parts", []))
    declarations = []
    for group in body.get("tools") or []:
        for d in group.get("functionDeclarations") or group.get("function_declarations") or []:
            params = (
                d.get("parameters")
                or d.get("parameters_json_schema")
                or d.get("parametersJsonSchema")
            )
            declarations.append(
                {
                    "name": d["name"],
                    "description": d.get("description") or "",
                    "parameters": _clean_schema(params or {"type": "object"}),
                }
            )
    declarations.sort(key=lambda d: d["name"])
    return {"system": system_text or None, "contents": contents, "tools": declarations}


def load_for(cassette: Cassette) -> list[dict[str, Any]]:
    """The recorded request bodies."""
    return [r.json() for r in cassette.requests]
