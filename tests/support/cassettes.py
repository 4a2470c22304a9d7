"""One loader for every recorded-traffic format in ``data/cassettes/README.md``.

    from tests.support.cassettes import DATA, load_cassette, load_bodies, replies_for

    cassette = load_cassette(DATA / "llm/openai/test_tool_use_basic.yaml")
    for interaction in cassette.interactions:
        interaction.request      # RecordedRequest | None (None for raw Prism bodies)
        interaction.response     # RecordedResponse: status, headers, body (decoded bytes)
    server.add(*replies_for(cassette))   # a WireServer serves the recorded responses

Formats (picked by extension and first line):

* VCR.py YAML (``interactions: [{request: {uri, body}, response: {status: {code}}}]``),
  including ``!!binary`` gzip bodies (decompressed here) and pydantic-ai's
  ``parsed_body`` variant (re-serialised with ``json.dumps``); Ruby VCR
  (``http_interactions``, ``body: {encoding, string | base64_string}``) too;
* go-vcr YAML (``version: 2``, or any file whose requests have ``url``;
  ``response.code`` or ``status: "200 OK"``);
* HAR 1.2 JSON (``log.entries``; ``.har``, or ``.json`` holding a HAR log);
* httprr (``httprr trace v1``, byte counted; chunked bodies de-chunked);
* raw response bodies (Prism ``.sse``/``.json``): one interaction, no request.
  :func:`load_bodies` loads a numbered series (``-1``, ``-2``, ...) as one cassette.

Bodies are always the bytes a client would see after HTTP decoding:
``content-encoding`` (gzip, deflate) and ``transfer-encoding`` are undone and
their headers dropped.
Header names are lower-cased.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import zlib
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from nbagent.tools import Tool
from tests.support.servers import RecordedRequest, RecordedResponse, Reply

DATA = Path(__file__).resolve().parents[1] / "providers" / "data" / "cassettes"
"""Root of the copied shared cassettes (``tests/providers/data/cassettes``)."""


@dataclass
class Interaction:
    request: RecordedRequest | None
    response: RecordedResponse


@dataclass
class Cassette:
    path: Path
    format: str
    """"vcr", "vcr-pydantic-ai", "go-vcr", "har", "httprr" or "raw"."""
    interactions: list[Interaction] = field(default_factory=list)

    @property
    def requests(self) -> list[RecordedRequest]:
        return [i.request for i in self.interactions if i.request is not None]

    @property
    def responses(self) -> list[RecordedResponse]:
        return [i.response for i in self.interactions]


def load_cassette(path: str | Path) -> Cassette:
    """Load any supported cassette file (see module docstring)."""
    path = Path(path)
    raw = path.read_bytes()
    if raw.startswith(b"httprr trace v1"):
        return _load_httprr(path, raw)
    if path.suffix == ".har":
        return _load_har(path, json.loads(raw))
    if path.suffix in (".yaml", ".yml"):
        data = yaml.safe_load(raw)
        items = data.get("interactions") or []
        # go-vcr (any version) names the request URL "url"; VCR.py and Ruby VCR say "uri".
        if data.get("version") == 2 or (items and "url" in (items[0].get("request") or {})):
            return _load_go_vcr(path, data)
        return _load_vcr(path, data)
    if raw.lstrip()[:1] == b"{" and b'"log"' in raw[:200] and b'"entries"' in raw:
        return _load_har(path, json.loads(raw))  # a HAR saved as .json
    return _load_raw(path, raw)


def load_bodies(paths: list[str | Path], status: int = 200) -> Cassette:
    """Raw response bodies of one conversation (Prism ``-1``, ``-2``...) as one cassette."""
    cassette = Cassette(Path(paths[0]), "raw")
    for path in paths:
        cassette.interactions += _load_raw(Path(path), Path(path).read_bytes(), status).interactions
    return cassette


def replies_for(cassette: Cassette, *, chunk_size: int = 97) -> list[Reply]:
    """One Reply per recorded response, in order."""
    return [Reply.recorded(r, chunk_size=chunk_size) for r in cassette.responses]


# --------------------------------------------------------------------------- formats


def _headers(pairs: Any) -> dict[str, str]:
    """Lower-cased header dict from a VCR map (name -> [values]) or a HAR list."""
    out: dict[str, str] = {}
    if isinstance(pairs, dict):
        for name, value in pairs.items():
            out[str(name).lower()] = (
                ", ".join(map(str, value)) if isinstance(value, list) else str(value)
            )
    elif isinstance(pairs, list):
        for item in pairs:
            out[str(item["name"]).lower()] = str(item["value"])
    return out


def _decoded(headers: dict[str, str], body: bytes) -> bytes:
    """Undo content-encoding: gzip (also detected from the magic bytes) and deflate.

    Recorders that decoded the body themselves often keep the header: a body that
    is not compressed is left as it is. Brotli and zstd cannot be undone here
    (no decoder in the standard library): that is a clear error, not garbage.
    """
    encoding = headers.pop("content-encoding", "").lower().strip()
    if body[:2] == b"\x1f\x8b":
        body = gzip.decompress(body)
    elif encoding == "deflate" and body[:1] == b"\x78":
        body = zlib.decompress(body)
    elif encoding in ("br", "zstd") and not _looks_like_text(body):
        raise ValueError(f"cannot decode a {encoding!r} content-encoded body")
    headers.pop("content-length", None)
    headers.pop("transfer-encoding", None)
    return body


def _looks_like_text(body: bytes) -> bool:
    try:
        body[:4096].decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _as_bytes(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return json.dumps(value).encode("utf-8")  # pydantic-ai parsed_body


def _load_vcr(path: Path, data: dict[str, Any]) -> Cassette:
    cassette = Cassette(path, "vcr")
    # Ruby VCR names the list "http_interactions" (and may store base64 bodies).
    for item in data.get("interactions") or data.get("http_interactions") or []:
        req, resp = item["request"], item["response"]
        if "parsed_body" in req or "parsed_body" in resp:
            cassette.format = "vcr-pydantic-ai"
        req_headers = _headers(req.get("headers"))
        req_body = req["parsed_body"] if "parsed_body" in req else _vcr_body(req.get("body"))
        request = RecordedRequest(
            str(req.get("method", "POST")).upper(), req["uri"], req_headers, _as_bytes(req_body)
        )
        resp_headers = _headers(resp.get("headers"))
        if "parsed_body" in resp:
            body = _as_bytes(resp["parsed_body"])
        else:
            body = _as_bytes(_vcr_body(resp.get("body")))
        status = resp["status"]["code"] if isinstance(resp["status"], dict) else resp["status"]
        status = int(str(status).split()[0])  # 200, "200" or "200 OK"
        response = RecordedResponse(int(status), resp_headers, _decoded(resp_headers, body))
        cassette.interactions.append(Interaction(request, response))
    return cassette


def _vcr_body(body: Any) -> Any:
    """The body of a VCR request/response: a plain value, ``{string: ...}`` (VCR.py,
    Ruby VCR) or ``{base64_string: ...}`` (Ruby VCR with binary bodies)."""
    if not isinstance(body, dict):
        return body
    if body.get("base64_string") is not None:
        return base64.b64decode(body["base64_string"])
    return body.get("string")


def _load_go_vcr(path: Path, data: dict[str, Any]) -> Cassette:
    cassette = Cassette(path, "go-vcr")
    for item in data.get("interactions", []):
        req, resp = item["request"], item["response"]
        request = RecordedRequest(
            req.get("method", "POST"),
            req["url"],
            _headers(req.get("headers")),
            _as_bytes(req.get("body")),
        )
        headers = _headers(resp.get("headers"))
        body = _decoded(headers, _as_bytes(resp.get("body")))
        status = resp.get("code") or str(resp.get("status", "200")).split()[0]
        cassette.interactions.append(
            Interaction(request, RecordedResponse(int(status), headers, body))
        )
    return cassette


def _load_har(path: Path, data: dict[str, Any]) -> Cassette:
    cassette = Cassette(path, "har")
    for entry in data["log"]["entries"]:
        req, resp = entry["request"], entry["response"]
        post = req.get("postData") or {}
        request = RecordedRequest(
            req["method"], req["url"], _headers(req.get("headers")), _as_bytes(post.get("text"))
        )
        headers = _headers(resp.get("headers"))
        content = resp.get("content") or {}
        body = _as_bytes(content.get("text"))
        if content.get("encoding") == "base64":
            body = base64.b64decode(body)
        if content.get("mimeType") and "content-type" not in headers:
            headers["content-type"] = content["mimeType"]
        body = _decoded(headers, body)
        cassette.interactions.append(
            Interaction(request, RecordedResponse(int(resp["status"]), headers, body))
        )
    return cassette


def _split_http(message: bytes) -> tuple[str, dict[str, str], bytes]:
    """(start line, lower-cased headers, body) of a raw HTTP/1.1 message (CRLF or LF)."""
    match = re.search(rb"\r?\n\r?\n", message)
    if match is None:
        head, body = message, b""
    else:
        head, body = message[: match.start()], message[match.end() :]
    lines = head.decode("latin-1").splitlines()
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return lines[0] if lines else "", headers, body


def _dechunk(body: bytes) -> bytes:
    out = bytearray()
    pos = 0
    while True:
        end = body.index(b"\n", pos)
        size = int(body[pos:end].split(b";")[0].strip(), 16)
        pos = end + 1
        if size == 0:
            return bytes(out)
        out += body[pos : pos + size]
        pos += size
        if body[pos : pos + 2] == b"\r\n":
            pos += 2
        elif body[pos : pos + 1] == b"\n":
            pos += 1


def _load_httprr(path: Path, raw: bytes) -> Cassette:
    cassette = Cassette(path, "httprr")
    pos = raw.index(b"\n") + 1
    while pos < len(raw):
        end = raw.index(b"\n", pos)
        n_req, n_resp = (int(x) for x in raw[pos:end].split())
        pos = end + 1
        req_bytes, pos = raw[pos : pos + n_req], pos + n_req
        resp_bytes, pos = raw[pos : pos + n_resp], pos + n_resp
        line, req_headers, req_body = _split_http(req_bytes)
        method, url = line.split(" ")[:2]
        status_line, headers, body = _split_http(resp_bytes)
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = _dechunk(body)
        body = _decoded(headers, body)
        request = RecordedRequest(method, url, req_headers, req_body)
        cassette.interactions.append(
            Interaction(request, RecordedResponse(int(status_line.split()[1]), headers, body))
        )
    return cassette


def _load_raw(path: Path, raw: bytes, status: int = 200) -> Cassette:
    """A bare body: NDJSON when several JSON lines, SSE when it has data: lines."""
    text = raw.lstrip()
    if text.startswith((b"data:", b"event:", b": ", b"id:")):  # ": comment" keep-alives
        content_type = "text/event-stream"
    elif _all_json_lines(raw) and (
        path.suffix == ".sse" or "stream" in path.name or len(raw.strip().splitlines()) > 1
    ):
        content_type = "application/x-ndjson"
    else:
        content_type = "application/json"
    response = RecordedResponse(status, {"content-type": content_type}, raw)
    return Cassette(path, "raw", [Interaction(None, response)])


def _all_json_lines(raw: bytes) -> bool:
    try:
        for line in raw.splitlines():
            if line.strip():
                json.loads(line)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- replay tools

_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
}


def recorded_tool(
    name: str,
    description: str,
    parameters: dict[str, Any] | None,
    answer: Any,
) -> Any:
    """An nbagent Tool named and shaped like a recorded tool declaration.

    Its Python signature is built from the JSON schema (top-level properties,
    ``required`` ones without default), so nbagent declares the same names, types
    and required set. ``answer(name, arguments) -> str`` gives the recorded result.
    """
    import inspect

    props = (parameters or {}).get("properties") or {}
    required = set((parameters or {}).get("required") or [])
    params = []
    annotations: dict[str, Any] = {}
    for pname, prop in props.items():
        kind = prop.get("type") if isinstance(prop, dict) else None
        annotation = _JSON_TYPES.get(kind, Any) if isinstance(kind, str) else Any
        if pname not in required:
            annotation = annotation | None if annotation is not Any else Any
        annotations[pname] = annotation
        default = inspect.Parameter.empty if pname in required else None
        params.append(
            inspect.Parameter(
                pname, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
            )
        )

    def fn(**kwargs: Any) -> Any:
        return answer(name, {k: v for k, v in kwargs.items() if v is not None})

    fn.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    fn.__annotations__ = annotations
    fn.__name__ = name
    fn.__doc__ = description
    return Tool(fn, name=name, description=description)


class RecordedResults:
    """Recorded tool results, looked up by tool name and arguments (FIFO per name
    as a fallback). ``add(name, arguments, content)`` in recorded call order."""

    def __init__(self) -> None:
        self._items: list[tuple[str, Any, str]] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def add(self, name: str, arguments: Any, content: str) -> None:
        self._items.append((name, arguments, content))

    def __call__(self, name: str, arguments: dict[str, Any]) -> str:
        self.calls.append((name, arguments))
        for item in self._items:
            if item[0] == name and item[1] == arguments:
                self._items.remove(item)
                return item[2]
        for item in self._items:
            if item[0] == name:
                self._items.remove(item)
                return item[2]
        raise AssertionError(f"no recorded result for {name}({arguments})")


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
        # Sequential: identical calls (same name and arguments) take their recorded results
        # in call order; run concurrently, which one starts first is up to the threads.
        return Tool(namespace[name], name=name, description=description or "", sequential=True)


def split_think(text: str) -> tuple[str, str]:
    """(thinking, answer) of a recorded reply that starts with a ``<think>`` block."""
    import re

    found = re.match(r"\s*<think>(.*?)</think>\s*", text, re.S)
    if found is None:
        return "", text
    return found.group(1).strip(), text[found.end() :]
