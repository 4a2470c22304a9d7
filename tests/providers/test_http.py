"""The shared HTTP layer: SSE/NDJSON framing, retries, error mapping, clients per loop."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import httpx
import pytest

from nbagent.errors import ProviderError
from nbagent.providers import TextChunk
from nbagent.providers.http import (
    HttpSession,
    NDJSONParser,
    SSEEvent,
    SSEParser,
    error_from_body,
    join_url,
)
from nbagent.providers.openai import OpenAIDecoder
from tests.support.servers import Reply, WireServer

# --------------------------------------------------------------------------- SSE


def _feed_all(parser: SSEParser, data: bytes, size: int) -> list[SSEEvent]:
    events: list[SSEEvent] = []
    for i in range(0, len(data), size):
        events += parser.feed(data[i : i + size])
    return events + parser.close()


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_sse_framing_any_newline_any_split(newline: str, size: int) -> None:
    text = newline.join(
        [
            ": a comment",
            "event: message_start",
            'data: {"a": 1}',
            "",
            "data: first line",
            "data:second line",
            "id: 7",
            "retry: 100",
            "unknown: x",
            "",
            "event: only-name-no-data",
            "",
            "data: caf\u00e9 \u2603",
            "",
            "data: [DONE]",
            "",
            "",
        ]
    )
    events = _feed_all(SSEParser(), text.encode("utf-8"), size)
    assert events == [
        SSEEvent("message_start", '{"a": 1}'),
        SSEEvent("", "first line\nsecond line"),
        SSEEvent("", "caf\u00e9 \u2603"),
        SSEEvent("", "[DONE]"),
    ]


def test_sse_byte_order_mark_is_dropped() -> None:
    events = _feed_all(SSEParser(), b"\xef\xbb\xbfdata: x\n\n", 2)
    assert events == [SSEEvent("", "x")]


def test_sse_last_event_without_blank_line_is_kept() -> None:
    parser = SSEParser()
    assert parser.feed(b'data: {"x": 1}\n') == []
    assert parser.close() == [SSEEvent("", '{"x": 1}')]


def test_sse_anthropic_padding_and_gemini_crlf() -> None:
    body = (
        b'event: content_block_stop\r\ndata: {"type":"content_block_stop","index":0   }\r\n\r\n'
        b"event: ping\r\ndata: {}\r\n\r\n"
    )
    events = _feed_all(SSEParser(), body, 5)
    assert [e.event for e in events] == ["content_block_stop", "ping"]
    assert json.loads(events[0].data) == {"type": "content_block_stop", "index": 0}


# --------------------------------------------------------------------------- NDJSON


@pytest.mark.parametrize("size", [1, 4, 64, 10_000])
def test_ndjson_any_split(size: int) -> None:
    values = [{"i": i, "text": "\u00e9\u2603" * i} for i in range(20)]
    data = b"".join(json.dumps(v, ensure_ascii=False).encode() + b"\r\n" for v in values)
    parser = NDJSONParser()
    out = []
    for i in range(0, len(data), size):
        out += parser.feed(data[i : i + size])
    assert out + parser.close() == values


def test_ndjson_malformed_line_raises() -> None:
    with pytest.raises(ValueError):
        NDJSONParser().feed(b'{"ok": 1}\n{"broken": \n')


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {
                "error": {
                    "message": "Bad key",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            },
            ("invalid_request_error/invalid_api_key", "Bad key", None),
        ),
        (
            {"object": "error", "message": "flat vllm", "type": "BadRequestError", "code": 400},
            ("BadRequestError", "flat vllm", None),
        ),
        (
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            ("overloaded_error", "Overloaded", None),
        ),
        (
            [
                {
                    "error": {
                        "code": 429,
                        "status": "RESOURCE_EXHAUSTED",
                        "message": "quota",
                        "details": [
                            {
                                "@type": "type.googleapis.com/google.rpc.RetryInfo",
                                "retryDelay": "1.5s",
                            }
                        ],
                    }
                }
            ],
            ("RESOURCE_EXHAUSTED", "quota", 1.5),
        ),
        ({"error": "model does not support tools"}, (None, "model does not support tools", None)),
        (b"<html>Bad Gateway</html>", (None, "<html>Bad Gateway</html>", None)),
    ],
)
def test_error_bodies_of_every_provider(body: object, expected: tuple) -> None:
    assert error_from_body("x", 400, body) == expected


def test_join_url() -> None:
    assert join_url("http://h/v1/", "/chat/completions") == "http://h/v1/chat/completions"
    assert join_url("http://h:1", "api/chat") == "http://h:1/api/chat"


# --------------------------------------------------------------------------- retries


def _session(server: WireServer, **kw: object) -> HttpSession:
    options: dict = {"secrets": ["sk-secret-123"], "auth_hint": "set X_API_KEY", **kw}
    return HttpSession(
        "openai",
        base_url=server.url,
        headers={"authorization": "Bearer sk-secret-123"},
        **options,
    )


OK = Reply(200, {"ok": True})


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529])
async def test_retryable_statuses_are_retried(wire_server: WireServer, status: int) -> None:
    wire_server.add(
        Reply(status, {"error": {"message": "busy"}}, headers={"retry-after-ms": "5"}), OK
    )
    assert await _session(wire_server).post_json("/x", {}) == {"ok": True}
    assert wire_server.count == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_client_errors_are_not_retried(wire_server: WireServer, status: int) -> None:
    wire_server.add(Reply(status, {"error": {"message": "nope sk-secret-123", "type": "t"}}), OK)
    with pytest.raises(ProviderError) as info:
        await _session(wire_server).post_json("/x", {})
    assert wire_server.count == 1
    assert info.value.status == status
    assert "sk-secret-123" not in str(info.value)
    assert ("set X_API_KEY" in str(info.value)) == (status == 401)


async def test_gives_up_after_max_retries(wire_server: WireServer) -> None:
    wire_server.add(*[Reply(503, {"error": {"message": "down"}}, headers={"retry-after": "0"})] * 5)
    with pytest.raises(ProviderError) as info:
        await _session(wire_server, max_retries=2).post_json("/x", {})
    assert wire_server.count == 3
    assert info.value.status == 503 and "down" in info.value.message
    assert "gave up after 2 retries" in info.value.message


async def test_quota_exhausted_429_is_not_retried(wire_server: WireServer) -> None:
    body = {
        "error": {
            "message": "You exceeded your current quota, please check your plan and "
            "billing details.",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    }
    wire_server.add(Reply(429, body), OK)
    with pytest.raises(ProviderError) as info:
        await _session(wire_server).post_json("/x", {})
    assert wire_server.count == 1
    assert info.value.error_type == "insufficient_quota"


async def test_gemini_retry_delay_is_honoured(wire_server: WireServer) -> None:
    body = {
        "error": {
            "code": 429,
            "status": "RESOURCE_EXHAUSTED",
            "message": "You exceeded your current quota.",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.2s"}
            ],
        }
    }
    wire_server.add(Reply(429, body), OK)
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert await _session(wire_server, backoff=0.0).post_json("/x", {}) == {"ok": True}
    assert wire_server.count == 2
    assert loop.time() - started >= 0.2  # waited as asked, not the (zero) backoff


async def test_retry_after_as_http_date(wire_server: WireServer) -> None:
    import email.utils

    when = email.utils.formatdate(time.time() - 5, usegmt=True)  # already past: no wait
    wire_server.add(Reply(503, {"error": {"message": "x"}}, headers={"retry-after": when}), OK)
    started = time.monotonic()
    assert await _session(wire_server, backoff=30.0).post_json("/x", {}) == {"ok": True}
    assert wire_server.count == 2
    assert time.monotonic() - started < 10  # the date was understood: no 30 s backoff


async def test_long_retry_after_is_not_waited_for(wire_server: WireServer) -> None:
    wire_server.add(
        Reply(429, {"error": {"message": "later"}}, headers={"retry-after": "3600"}), OK
    )
    with pytest.raises(ProviderError) as info:
        await _session(wire_server).post_json("/x", {})
    assert wire_server.count == 1
    assert "3600 s" in info.value.message


async def test_x_should_retry_false_wins(wire_server: WireServer) -> None:
    wire_server.add(
        Reply(500, {"error": {"message": "no"}}, headers={"x-should-retry": "false"}), OK
    )
    with pytest.raises(ProviderError):
        await _session(wire_server).post_json("/x", {})
    assert wire_server.count == 1


async def test_connection_refused_is_retried_then_clear_error() -> None:
    server = WireServer()
    url = server.url
    server.close()  # nothing listens there any more
    http = HttpSession("ollama", base_url=url, max_retries=2, backoff=0.01)
    with pytest.raises(ProviderError) as info:
        await http.post_json("/api/chat", {})
    assert info.value.error_type == "connection_error"
    assert "could not connect" in info.value.message and "after 2 retries" in info.value.message


async def test_200_that_is_not_json(wire_server: WireServer) -> None:
    wire_server.add(Reply(200, b"<html>proxy login</html>", headers={"content-type": "text/html"}))
    with pytest.raises(ProviderError) as info:
        await _session(wire_server).post_json("/x", {})
    assert info.value.error_type == "malformed_response"
    assert "proxy login" in info.value.message


async def test_error_body_is_read_when_streaming(wire_server: WireServer) -> None:
    wire_server.add(Reply(400, {"error": {"message": "bad stream request", "type": "invalid"}}))
    with pytest.raises(ProviderError) as info:
        async for _ in _session(wire_server).post_stream("/x", {}):
            pass
    assert info.value.message == "bad stream request"


def test_error_payload_after_200_raises_after_the_events_before_it() -> None:
    body = b"".join(
        b"data: " + json.dumps(payload).encode() + b"\n\n"
        for payload in (
            {"choices": [{"index": 0, "delta": {"content": "Hel"}}]},
            {"error": {"message": "server melted", "type": "server_error"}},
            {"choices": [{"index": 0, "delta": {"content": "lo"}}]},
        )
    )
    decoder = OpenAIDecoder()
    assert decoder.feed(body) == [TextChunk("Hel")]  # one read: the text before the error
    assert decoder.error is not None
    assert decoder.error.error_type == "server_error"
    assert "server melted" in decoder.error.message
    with pytest.raises(ProviderError):
        decoder.close()


# --------------------------------------------------------------------------- clients


async def test_one_client_per_event_loop(wire_server: WireServer) -> None:
    """The same session used from this loop and a second loop in a thread."""
    wire_server.add(OK, OK, OK)
    http = _session(wire_server)
    assert await http.post_json("/x", {}) == {"ok": True}
    mine = http.client()
    other: dict = {}

    def in_thread() -> None:
        async def work() -> None:
            other["result"] = await http.post_json("/x", {})
            other["client"] = http.client()
            await http.aclose()  # closes every client it made, each on its own loop

        asyncio.run(work())

    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join(10)
    assert other["result"] == {"ok": True}
    assert other["client"] is not mine and other["client"].is_closed
    await asyncio.sleep(0.1)  # the close scheduled on this loop runs
    assert mine.is_closed
    assert await http.post_json("/x", {}) == {"ok": True}  # a fresh client
    assert http.client() is not mine
    await http.aclose()


async def test_caller_client_is_used_and_not_closed(wire_server: WireServer) -> None:
    wire_server.add(OK)
    async with httpx.AsyncClient(headers={"x-caller": "yes"}) as client:
        http = _session(wire_server, http_client=client)
        assert await http.post_json("/x", {}) == {"ok": True}
        await http.aclose()
        assert not client.is_closed
    assert wire_server.requests[0].headers["x-caller"] == "yes"
    assert wire_server.requests[0].headers["authorization"] == "Bearer sk-secret-123"


def test_repr_has_no_secret() -> None:
    http = HttpSession(
        "openai", base_url="http://h", headers={"authorization": "Bearer sk-9"}, secrets=["sk-9"]
    )
    assert "sk-9" not in repr(http)
