"""The API key never appears in error messages, reprs, logs, URLs or the saved conversation.

Each scenario runs a real Agent against the loopback server (or a closed port) with a
distinctive key, captures every log record at DEBUG, and searches all of it for the key.
The servers echo the key back in their error text, as real APIs sometimes do
("Incorrect API key provided: sk-..."), so redaction is really exercised. The last
check confirms the key did travel, in its header, so the searches can fail.
"""

from __future__ import annotations

import logging
import socket
import traceback

import pytest

from nbagent import Agent
from nbagent._internal.redaction import REDACTED
from nbagent.errors import ProviderError
from nbagent.providers.anthropic import AnthropicProvider
from nbagent.providers.gemini import GeminiProvider
from tests.support.servers import Anthropic, Reply

KEY = "sk-test-key-LEAKCHECK-8f3a2c71d9"

PROVIDERS = {
    "anthropic": (AnthropicProvider, "x-api-key"),
    "gemini": (GeminiProvider, "x-goog-api-key"),
}


def _closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _replies(provider: str) -> list[Reply]:
    """Auth error echoing the key, a stream error echoing it, then a good answer."""
    if provider == "anthropic":
        error = {"type": "authentication_error", "message": f"invalid x-api-key {KEY}"}
        auth = Reply(401, {"type": "error", "error": error})
        stream_error = Reply.sse(
            [
                Anthropic.event("message_start", message={"usage": {}}),
                Anthropic.event("error", error={"type": "api_error", "message": f"bad key {KEY}"}),
            ]
        )
        ok = Reply.sse(
            [
                Anthropic.event("message_start", message={"usage": {"input_tokens": 1}}),
                Anthropic.event(
                    "content_block_start", index=0, content_block={"type": "text", "text": "fine"}
                ),
                Anthropic.event("content_block_stop", index=0),
                Anthropic.event(
                    "message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 1}
                ),
                Anthropic.event("message_stop"),
            ]
        )
    else:
        error = {"code": 400, "status": "INVALID_ARGUMENT", "message": f"API key not valid: {KEY}"}
        auth = Reply(400, {"error": error})
        broken = {"code": 500, "status": "INTERNAL", "message": f"key {KEY} broke"}
        stream_error = Reply.sse([{"error": broken}])
        answer = {"content": {"role": "model", "parts": [{"text": "fine"}]}, "finishReason": "STOP"}
        ok = Reply.sse([{"candidates": [answer]}])
    return [auth, stream_error, ok]


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
async def test_key_never_leaks(provider, wire_server, caplog):
    cls, header = PROVIDERS[provider]
    caplog.set_level(logging.DEBUG)
    texts: list[str] = []

    def record(error: BaseException) -> None:
        texts.extend([str(error), repr(error), "".join(traceback.format_exception(error))])
        if isinstance(error, ProviderError):
            texts.append(error.message)

    wire_server.add(*_replies(provider))
    instance = cls("model-x", base_url=wire_server.url, api_key=KEY, backoff=0.01)
    agent = Agent(instance, tools=[], store=None)
    texts += [repr(instance), repr(agent), repr(instance.session)]
    for _ in range(2):  # the auth error, then the error inside a 200 stream
        with pytest.raises(ProviderError) as caught:
            await agent.run("hello")
        record(caught.value)
    result = await agent.run("hello")
    assert result.output == "fine"
    texts += [repr(result), result._repr_markdown_(), agent.conversation.to_json()]

    # Nothing listening: the connection error names the URL, not the key.
    offline = cls("model-x", base_url=_closed_port_url(), api_key=KEY, max_retries=1, backoff=0.01)
    with pytest.raises(ProviderError) as caught:
        await Agent(offline, tools=[], store=None).run("hello")
    assert caught.value.error_type == "connection_error"
    record(caught.value)

    # Missing key: the ConfigError says which variable to set.
    from nbagent.errors import ConfigError

    with pytest.raises(ConfigError) as missing:
        cls("model-x", env={})
    assert ("ANTHROPIC_API_KEY" if provider == "anthropic" else "GEMINI_API_KEY") in str(
        missing.value
    )

    texts += [r.getMessage() for r in caplog.records]
    texts += [r.url for r in wire_server.requests]
    assert caplog.records, "the run logged nothing, so the log check would be empty"
    for text in texts:
        assert KEY not in text
    # The servers' echoed key was replaced, not the whole message dropped.
    assert any(REDACTED in t for t in texts)
    # And the key did travel, in its header only.
    assert [r.headers[header] for r in wire_server.requests] == [KEY] * 3
