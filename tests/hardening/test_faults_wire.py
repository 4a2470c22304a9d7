"""Misbehaving servers, for all four HTTP wire formats, over real loopback HTTP.

Resets before and mid-stream, stalls, byte-a-second bodies, oversized and invalid
chunks, hostile retry headers and redirects. For each: the run ends within its
deadline with a clear outcome (an answer, or a ProviderError carrying the
provider's own message), the next run on the same agent works, the history is
valid, and no fragment of the key is in what the user sees.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from nbagent import Agent
from nbagent.errors import ProviderError
from tests.core.helpers import assert_history_valid
from tests.support.agents import TEST_KEY, http_agent
from tests.support.servers import Anthropic, Gemini, Ollama, OpenAI, Reply, WireServer


@dataclass
class Wire:
    """What a test needs to speak one wire format."""

    model: str
    api_key: str | None
    answer: Callable[[str], Reply]
    error: Callable[..., Reply]
    """``error(status, message, headers=...)``: an error reply in this API's shape."""
    frame: Callable[[bytes], bytes]
    """One raw payload framed as this format frames it (an SSE event or an NDJSON line)."""


def _sse(payload: bytes) -> bytes:
    return b"data: " + payload + b"\n\n"


def _ndjson(payload: bytes) -> bytes:
    return payload + b"\n"


WIRES = {
    "openai": Wire(
        "openai:gpt-test", TEST_KEY, lambda text: OpenAI.text_stream(text),
        lambda status, message, **o: Reply(
            status, {"error": {"message": message, "type": "rate_limit_exceeded"}}, **o
        ),
        _sse,
    ),
    "anthropic": Wire(
        "anthropic:claude-test", TEST_KEY, lambda text: Anthropic.stream(text),
        lambda status, message, **o: Anthropic.error(status, "rate_limit_error", message, **o),
        _sse,
    ),
    "gemini": Wire(
        "gemini:gemini-test", TEST_KEY, lambda text: Gemini.text_stream(text),
        lambda status, message, **o: Gemini.error(status, "UNAVAILABLE", message, **o),
        _sse,
    ),
    "ollama": Wire(
        "ollama:qwen3", None,
        lambda text: Reply.ndjson([*Ollama.text_chunks(text), Ollama.done()]),
        lambda status, message, **o: Reply(status, {"error": message}, **o),
        _ndjson,
    ),
}  # fmt: skip


@pytest.fixture(params=list(WIRES))
def wire(request: pytest.FixtureRequest) -> Wire:
    return WIRES[request.param]


@pytest.fixture
def server():
    started = WireServer()
    yield started
    started.close()


def make_agent(wire: Wire, server: WireServer, **options: Any) -> Agent:
    options.setdefault("timeout", 20)
    return http_agent(wire.model, server, api_key=wire.api_key, tools=[], **options)


def outcome(agent: Agent, prompt: str = "hi") -> tuple[str, float, BaseException | None]:
    """The run's output (or its error), how long it took, and the error raised if any."""
    started = time.monotonic()
    try:
        result = agent.run_sync(prompt)
    except ProviderError as exc:
        return str(exc), time.monotonic() - started, exc
    return result.output, time.monotonic() - started, None


def then_next_run_works(agent: Agent, server: WireServer, wire: Wire) -> None:
    """The same agent answers the next prompt, and its history is valid."""
    server.add(wire.answer("all good"))
    assert agent.run_sync("again").output == "all good"
    assert_history_valid(agent.conversation)
    for message in agent.conversation.messages:
        assert_no_key(message.content)


def assert_no_key(text: str) -> None:
    fragments = {TEST_KEY[i : i + 10] for i in range(len(TEST_KEY) - 9)}
    assert not any(f in text for f in fragments), text


# -- connections ------------------------------------------------------------------------


def test_a_reset_before_the_first_byte_is_retried(wire, server):
    server.add(Reply(reset=True), wire.answer("after the reset"))
    agent = make_agent(wire, server)
    text, took, error = outcome(agent)
    assert error is None and text == "after the reset" and server.count == 2
    then_next_run_works(agent, server, wire)


def test_a_reset_mid_stream_ends_the_run_with_a_clear_error(wire, server):
    reply = wire.answer("a long answer that will be cut off")
    reply.drop_after = 1
    server.add(reply)
    agent = make_agent(wire, server)
    text, took, error = outcome(agent)
    assert isinstance(error, ProviderError) and "connection dropped mid-stream" in text
    assert server.count == 1  # never retried once the stream had started
    assert agent.last_result is not None and agent.last_result.stop_reason == "error"
    assert_no_key(text)
    then_next_run_works(agent, server, wire)


@pytest.mark.parametrize("where", ["before the first byte", "mid-stream"])
def test_a_stalled_server_ends_at_the_run_deadline(wire, server, where):
    reply = wire.answer("stalls after the first piece")
    if where == "mid-stream":
        reply.chunk_delay = 60
    else:
        reply.first_byte_delay = 60
    server.add(reply)
    agent = make_agent(wire, server, timeout=2)
    text, took, error = outcome(agent)
    assert error is None and agent.last_result is not None
    assert agent.last_result.stop_reason == "timeout" and text.endswith("[run timed out]")
    assert took < 12
    agent.settings = agent.settings.replace(timeout=20)
    then_next_run_works(agent, server, wire)


def test_a_byte_a_second_body_ends_at_the_run_deadline(wire, server):
    body = wire.answer("x" * 40).chunks
    assert body is not None
    trickle = b"".join(body)
    server.add(Reply(200, b"", {"content-type": "text/event-stream"}, list(
        trickle[i : i + 1] for i in range(len(trickle))
    ), chunk_delay=0.5))  # fmt: skip
    agent = make_agent(wire, server, timeout=2)
    text, took, error = outcome(agent)
    assert error is None and agent.last_result is not None
    assert agent.last_result.stop_reason == "timeout" and text.endswith("[run timed out]")
    assert took < 12  # the run's 2 s deadline, not the body's minutes
    agent.settings = agent.settings.replace(timeout=20)
    then_next_run_works(agent, server, wire)


# -- chunks -------------------------------------------------------------------------------


def test_an_invalid_chunk_is_a_clear_error(wire, server):
    server.add(Reply(200, b"", {"content-type": "text/event-stream"}, [
        wire.frame(b'{"not json'),
    ]))  # fmt: skip
    agent = make_agent(wire, server)
    text, took, error = outcome(agent)
    assert isinstance(error, ProviderError) and "malformed chunk in stream" in text
    then_next_run_works(agent, server, wire)


@pytest.mark.parametrize("ends", [True, False], ids=["oversized line", "endless line"])
def test_an_oversized_or_endless_line_is_a_clear_error(wire, server, ends):
    megabyte = b"a" * (1 << 20)
    chunks = [b"data: " if wire.frame is _sse else b""] + [megabyte] * 17
    if ends:
        chunks.append(b"\n\n")
    else:
        chunks += [megabyte] * 100  # would go on; the parser stops at 16 MiB
    server.add(Reply(200, b"", {"content-type": "text/event-stream"}, chunks))
    agent = make_agent(wire, server)
    text, took, error = outcome(agent)
    assert isinstance(error, ProviderError), text
    assert "stream rejected: a stream line grew past 16,777,216 bytes" in text
    assert error.error_type == "line_too_long"
    then_next_run_works(agent, server, wire)


# -- retry headers ---------------------------------------------------------------------------


def test_a_retry_wait_over_the_cap_fails_at_once_with_the_providers_message(wire, server):
    headers = {"retry-after": "86400", "x-should-retry": "true"}
    server.add(wire.error(429, "slow down please", headers=headers))
    agent = make_agent(wire, server, timeout=30)
    text, took, error = outcome(agent)
    assert isinstance(error, ProviderError) and error.status == 429
    assert "slow down please" in text and "asks to wait 86400 s" in text
    assert took < 10 and server.count == 1
    then_next_run_works(agent, server, wire)


@pytest.mark.parametrize(
    "headers",
    [
        {"retry-after": "100"},
        {"retry-after-ms": "100000", "x-should-retry": "true"},
        {"retry-after": "<a date 100 s from now>"},
    ],
    ids=["retry-after", "retry-after-ms", "retry-after HTTP date"],
)
def test_a_retry_wait_longer_than_the_run_has_left_fails_at_once(wire, server, headers):
    if headers.get("retry-after") == "<a date 100 s from now>":
        headers = {"retry-after": email.utils.formatdate(time.time() + 100, usegmt=True)}
    server.add(wire.error(429, "slow down please", headers=headers))
    agent = make_agent(wire, server, timeout=5)
    text, took, error = outcome(agent)
    assert isinstance(error, ProviderError) and error.status == 429  # not "timeout"
    assert "slow down please" in text and "the run has" in text
    assert took < 4 and server.count == 1
    agent.settings = agent.settings.replace(timeout=20)
    then_next_run_works(agent, server, wire)


@pytest.mark.parametrize(
    "headers",
    [
        {"retry-after": "nan"},
        {"retry-after": "inf", "x-should-retry": "true"},
        {"retry-after": "-5"},
        {"retry-after": "soon"},
        {"retry-after": "1e400"},
        {"retry-after-ms": "nan", "retry-after": "NaN"},
        {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"},  # in the past: no wait
        {"retry-after": "Thu, 99 Foo 2015 99:99:99 GMT"},
        {"x-should-retry": " TRUE "},
    ],
    ids=lambda h: json.dumps(h),
)
def test_an_unparsable_retry_wait_falls_back_to_the_normal_backoff(wire, server, headers):
    server.add(wire.error(503, "busy", headers=headers), wire.answer("after the retry"))
    agent = make_agent(wire, server, timeout=10)
    text, took, error = outcome(agent)
    assert error is None and text == "after the retry", text
    assert took < 8 and server.count == 2
    then_next_run_works(agent, server, wire)


# -- redirects ---------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_not_followed(wire, server, status):
    elsewhere = WireServer()
    try:
        elsewhere.add(wire.answer("from elsewhere"))
        server.add(Reply(status, b"", {"location": elsewhere.url + "/v1/anything"}))
        agent = make_agent(wire, server)
        text, took, error = outcome(agent)
        assert isinstance(error, ProviderError) and error.status == status
        assert "redirects are not followed" in text and elsewhere.url in text
        assert elsewhere.count == 0  # nothing was sent where the server pointed
    finally:
        elsewhere.close()
    then_next_run_works(agent, server, wire)


def _retry_info(delay: str) -> list[dict[str, str]]:
    return [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}]


@pytest.mark.parametrize("delay", ["nans", "infs", "-3s", "soon"])
def test_an_unparsable_gemini_retry_delay_falls_back_to_the_normal_backoff(server, delay):
    wire = WIRES["gemini"]
    server.add(
        Gemini.error(429, "RESOURCE_EXHAUSTED", "slow down please", _retry_info(delay)),
        wire.answer("after the retry"),
    )
    agent = make_agent(wire, server, timeout=10)
    text, took, error = outcome(agent)
    assert error is None and text == "after the retry", text
    assert took < 8 and server.count == 2
    then_next_run_works(agent, server, wire)


@pytest.mark.parametrize("delay", ["86400s", "100s"])
def test_a_gemini_retry_delay_over_the_cap_or_the_time_left_fails_at_once(server, delay):
    wire = WIRES["gemini"]
    server.add(Gemini.error(429, "RESOURCE_EXHAUSTED", "slow down please", _retry_info(delay)))
    agent = make_agent(wire, server, timeout=5)
    text, took, error = outcome(agent)
    assert isinstance(error, ProviderError) and error.status == 429
    assert "slow down please" in text and f"asks to wait {delay[:-1]} s" in text
    assert took < 4 and server.count == 1
    agent.settings = agent.settings.replace(timeout=20)
    then_next_run_works(agent, server, wire)
