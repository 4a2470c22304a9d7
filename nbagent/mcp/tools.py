"""MCP tools as ordinary nbagent tools: names, schemas, arguments and results."""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from .._internal.images import MAX_PIXELS
from ..errors import ConfigError, NbAgentError
from ..messages import ToolCall
from ..tools import Tool

NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
"""A tool name every provider accepts (OpenAI's and Gemini's rules together)."""


class MCPError(NbAgentError):
    """An MCP tool reported an error, or its server could not be reached."""


class MCPText(str):
    """A tool's text parts as the model sees them, carrying what text cannot show.

    ``images`` holds ``(mime type, bytes)`` of every image the tool returned (image
    content and embedded image resources); they reach the model as images through
    :attr:`model_images` (downscaled and charged to the round's budget by
    ``tools.images.with_images``). ``structured`` is the tool's structured content.
    """

    images: list[tuple[str, bytes]]
    structured: Any

    @property
    def model_images(self) -> list[Any]:
        """The images for the model, in the order the tool returned them.

        PNG/JPEG bytes as they are, other formats (GIF, WebP...) opened with Pillow
        when it is installed; bytes that are neither stay bytes, so the result says
        why they were not sent.
        """
        return [_openable(mime, data) for mime, data in self.images]


def _openable(mime: str, data: bytes) -> Any:
    if data[:4].startswith((b"\x89PNG", b"\xff\xd8\xff")):
        return data
    try:
        from PIL import Image as PILImage
    except ImportError:
        return data
    try:
        with PILImage.open(io.BytesIO(data)) as opened:
            if opened.size[0] * opened.size[1] > MAX_PIXELS:
                return data  # refused by to_image's own check, with its message
            opened.load()
            return opened.convert("RGBA" if "A" in opened.mode or "transparency" in opened.info
                                  else "RGB")  # fmt: skip
    except Exception:  # noqa: BLE001 - not an image Pillow reads: to_image names the problem
        return data


def wire_name(name: str, prefix: str | None) -> str:
    """``prefix_name``, made valid for every provider (other characters become ``_``)."""
    full = f"{prefix}_{name}" if prefix else name
    full = re.sub(r"[^A-Za-z0-9_-]", "_", full)
    if not full or not (full[0].isalpha() or full[0] == "_"):
        full = "_" + full
    return full[:64]


def check_schema(server: str, name: str, schema: Any) -> dict[str, Any]:
    """The tool's input schema as nbagent's parameters, or ConfigError naming what is wrong."""
    if schema is None:
        return {"type": "object", "properties": {}}
    if not isinstance(schema, dict):
        raise ConfigError(f"MCP tool {name!r} of server {server!r}: its schema is not an object")
    kind = schema.get("type", "object")
    if kind != "object":
        raise ConfigError(
            f"MCP tool {name!r} of server {server!r}: its input schema describes {kind!r}, "
            "but tool arguments must be an object (no provider accepts another root type)"
        )
    try:
        json.dumps(schema)
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"MCP tool {name!r} of server {server!r}: schema is not JSON ({exc})"
        ) from None
    problem = _malformed(schema, "")
    if problem:
        raise ConfigError(
            f"MCP tool {name!r} of server {server!r}: {problem} (providers refuse such a schema)"
        )
    for ref in _refs(schema):
        if not _resolves(schema, ref):
            raise ConfigError(
                f"MCP tool {name!r} of server {server!r}: its schema refers to {ref!r}, "
                "which it does not define (no provider can resolve it)"
            )
    parameters: dict[str, Any] = {k: v for k, v in schema.items() if k not in ("$schema", "title")}
    parameters["type"] = "object"
    parameters.setdefault("properties", {})
    return parameters


_TYPES = {"string", "number", "integer", "boolean", "object", "array", "null"}
_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_Holder = type[dict[str, Any]] | type[list[Any]]
_HOLDERS: dict[str, tuple[_Holder, str]] = {
    **dict.fromkeys(_MAPS, (dict, "an object")),
    **dict.fromkeys(_LISTS, (list, "a list")),
}
"""Keywords holding subschemas by name or by position, with the container each must be."""
_ONE = ("items", "additionalProperties", "not", "if", "then", "else")


def _malformed(node: Any, at: str) -> str | None:
    """What makes ``node`` no JSON schema a provider accepts (None: nothing found).

    Checks the places subschemas sit (property schemas, items, anyOf...), ``type``
    names and ``required``; ``at`` is the path shown in the message.
    """
    where = f"'{at}'" if at else "the schema"
    if isinstance(node, bool) and at:
        return None  # true/false subschemas are JSON Schema
    if not isinstance(node, dict):
        return f"{where} is {json.dumps(node)[:40]}, not a schema object"
    kinds = node.get("type")
    for kind in kinds if isinstance(kinds, list) else [kinds] if kinds is not None else []:
        if kind not in _TYPES:
            return f"{where} has type {json.dumps(kind)[:40]}, which is no JSON schema type"
    required = node.get("required")
    if required is not None and not (
        isinstance(required, list) and all(isinstance(r, str) for r in required)
    ):
        return f"'required' of {where} is not a list of names"
    for key, (holder, what) in _HOLDERS.items():
        children = node.get(key)
        if children is None:
            continue
        if not isinstance(children, holder):
            return f"'{key}' of {where} is not {what}"
        for place, child in _placed(children):
            found = _malformed(child, f"{at}.{key}{place}".lstrip("."))
            if found:
                return found
    for key in _ONE:
        if key in node:
            found = _malformed(node[key], f"{at}.{key}".lstrip("."))
            if found:
                return found
    return None


def _placed(children: dict[str, Any] | list[Any]) -> list[tuple[str, Any]]:
    """Each subschema of a holder with its place in the path (``.name`` or ``[index]``)."""
    if isinstance(children, dict):
        return [(f".{name}", child) for name, child in children.items()]
    return [(f"[{index}]", child) for index, child in enumerate(children)]


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [r for value in node.values() for r in _refs(value)]
    if isinstance(node, list):
        return [r for item in node for r in _refs(item)]
    return []


def _resolves(schema: dict[str, Any], ref: str) -> bool:
    """Whether a local ``#/...`` reference points at something inside ``schema``."""
    if not ref.startswith("#"):
        return False  # remote references are never fetched
    node: Any = schema
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


class MCPTool(Tool):
    """One tool of an MCP server. Calling it sends ``tools/call`` to the server."""

    def __init__(
        self,
        *,
        server: str,
        remote_name: str,
        name: str,
        description: str,
        parameters: dict[str, Any],
        call: Callable[[str, dict[str, Any]], Awaitable[Any]],
        timeout: float | None,
        requires_approval: bool,
    ) -> None:
        # Not Tool.__init__: the schema comes from the server, not from a signature.
        self.server = server
        self.origin = f"MCP server {server!r}"
        self.remote_name = remote_name
        self.name = name
        self.description = description
        self.parameters = parameters
        self.timeout = timeout
        self.requires_approval = requires_approval
        self.max_output_chars = None
        self.sequential = False
        self.is_async = True
        self.is_async_generator = False
        self.retries = 0  # a failed MCP call is reported, not repeated (it may have side effects)
        self.retry_on = ()
        self.retry_backoff = 0.5
        self._call = call
        self.__name__ = name
        self.__doc__ = description

        async def fn(**arguments: Any) -> Any:
            return await call(remote_name, arguments)

        self.fn = fn

    def __repr__(self) -> str:
        return f"MCPTool({self.name!r}, server={self.server!r})"

    def __get__(self, instance: Any, owner: type | None = None) -> MCPTool:
        return self

    def validate(self, call: ToolCall) -> dict[str, Any]:
        """The call's arguments; the server validates them against its own schema."""
        from ..tools.schema import ArgumentError, parse_raw_arguments

        arguments = call.arguments
        if call.raw_arguments is not None and not arguments:
            arguments = parse_raw_arguments(call.raw_arguments)
        if not isinstance(arguments, dict):
            raise ArgumentError("arguments must be a JSON object")
        missing = [k for k in self.parameters.get("required", []) if k not in arguments]
        if missing:
            raise ArgumentError(f"missing required argument(s): {', '.join(missing)}")
        return dict(arguments)


def to_value(result: Any) -> Any:
    """A ``CallToolResult`` as the tool's value; ``isError`` raises MCPError with its text.

    Text parts become the value's text; images (image content, and embedded resources
    whose MIME type is an image) are kept on it for the model (see :class:`MCPText`).
    """
    texts: list[str] = []
    images: list[tuple[str, bytes]] = []
    for block in result.content or []:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind in ("image", "audio"):
            data = base64.b64decode(block.data)
            if kind == "image":
                images.append((block.mime_type, data))
            else:
                texts.append(f"[audio {block.mime_type}, {len(data):,} bytes: not sent]")
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            if text is not None:
                texts.append(f"[resource {resource.uri}]\n{text}")
            else:
                blob = base64.b64decode(getattr(resource, "blob", "") or "")
                mime = getattr(resource, "mime_type", None) or "binary"
                if mime.startswith("image/"):
                    images.append((mime, blob))
                    texts.append(f"[resource {resource.uri}: {mime}]")
                else:
                    texts.append(f"[resource {resource.uri}: {mime}, {len(blob):,} bytes]")
        elif kind == "resource_link":
            texts.append(f"[resource link {block.uri}: {block.name}]")
    text = "\n".join(texts)
    if result.is_error:
        raise MCPError(text or "the tool reported an error without text")
    structured = getattr(result, "structured_content", None)
    if not texts and structured is not None:
        text = json.dumps(structured, ensure_ascii=False)
    value = MCPText(text)
    value.images = images
    value.structured = structured
    return value
