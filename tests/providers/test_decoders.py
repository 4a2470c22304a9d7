"""Every API's decoder on recorded response bodies, without a server.

A decoder takes a body's bytes in any split (``feed``) and gives the same events
for a stream and for a whole reply (``close``). Each recorded body here is decoded
whole and cut in pieces of 1, 7 and 97 bytes; the text and the calls must be what
an independent parser (``tests/support/replay/bodies.py``) reads out of it, the
events the same for every split, and the last event one Finished.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from nbagent.errors import ProviderError
from nbagent.providers import (
    Finished,
    ProviderEvent,
    TextChunk,
    ToolCallReady,
    UsageReport,
    invented_id_patterns,
)
from nbagent.providers.anthropic import AnthropicDecoder
from nbagent.providers.gemini import GeminiDecoder
from nbagent.providers.http import Decoder
from nbagent.providers.ollama import OllamaDecoder
from nbagent.providers.openai import OpenAIDecoder
from nbagent.providers.schema_convert import NameMap
from tests.support.cassettes import DATA, load_bodies, load_cassette
from tests.support.replay.bodies import PARSERS
from tests.support.servers import RecordedResponse

DECODERS: dict[str, Callable[[bool], Decoder]] = {
    "openai": lambda stream: OpenAIDecoder(stream=stream),
    "anthropic": lambda stream: AnthropicDecoder(stream=stream),
    "gemini": lambda stream: GeminiDecoder(
        NameMap([], allowed="a-zA-Z0-9_.:-", max_len=128), stream=stream
    ),
    "ollama": lambda stream: OllamaDecoder(stream=stream),
}

RECORDINGS = [
    ("openai", "llm/openai/test_tool_use_basic.yaml"),
    ("openai", "fantasy/openai/openai-gpt-4o/multi_tool_streaming.yaml"),
    ("openai", "mirascope/openai/test_call_with_tool_error/openai_gpt_4o_completions.yaml"),
    ("anthropic", "fantasy/anthropic/claude-sonnet-4/multi_tool_streaming.yaml"),
    ("anthropic", "llm-anthropic/anthropic/test_tools.yaml"),
    ("anthropic", "pydantic-ai/anthropic/test_multiple_parallel_tool_calls.yaml"),
    ("gemini", "fantasy/gemini/gemini-2.5-flash/multi_tool_streaming.yaml"),
    ("gemini", "pydantic-ai/gemini/test_google_model_iter_stream.yaml"),
    ("gemini", "mirascope/gemini/test_call_with_tool_error/google_gemini_2_5_flash.yaml"),
    ("ollama", "openllmetry/ollama/test_ollama_streaming_chat_legacy.yaml"),
    ("ollama", "openllmetry/ollama/test_ollama_chat_tool_calls_legacy.yaml"),
]


def decode(api: str, body: bytes, *, stream: bool, size: int | None) -> list[ProviderEvent]:
    decoder = DECODERS[api](stream)
    size = size or len(body)
    events: list[ProviderEvent] = []
    for start in range(0, len(body), size):
        events += decoder.feed(body[start : start + size])
        assert decoder.error is None
    return events + decoder.close()


def summary(events: list[ProviderEvent]) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    text = "".join(e.text for e in events if isinstance(e, TextChunk))
    calls = [(e.call.name, e.call.arguments) for e in events if isinstance(e, ToolCallReady)]
    return text, calls


def comparable(events: list[ProviderEvent]) -> list[Any]:
    """The events other than text, with call ids a decoder made up (random) blanked."""
    invented = re.compile("|".join(invented_id_patterns()))
    out: list[Any] = []
    for event in events:
        if isinstance(event, ToolCallReady):
            call = event.call
            call_id = "<invented>" if invented.fullmatch(call.id) else call.id
            out.append((call_id, call.name, call.arguments, call.raw_arguments, call.provider_data))
        elif not isinstance(event, TextChunk):
            out.append(event)
    return out


def responses() -> list[tuple[str, str, int, RecordedResponse]]:
    out = []
    for api, name in RECORDINGS:
        for index, response in enumerate(load_cassette(DATA / name).responses):
            out.append((api, name, index, response))
    return out


@pytest.mark.parametrize(
    ("api", "name", "index", "response"),
    responses(),
    ids=[f"{api}:{name.split('/')[-1]}:{index}" for api, name, index, _ in responses()],
)
def test_recorded_body_decodes_the_same_in_any_split(
    api: str, name: str, index: int, response: RecordedResponse
) -> None:
    whole = decode(api, response.body, stream=response.is_stream, size=None)
    assert isinstance(whole[-1], Finished)
    assert sum(isinstance(e, Finished) for e in whole) == 1
    assert summary(whole) == PARSERS[api](response)
    for size in (1, 7, 97):
        pieces = decode(api, response.body, stream=response.is_stream, size=size)
        assert summary(pieces) == summary(whole)
        assert comparable(pieces) == comparable(whole)


def test_prism_ollama_bodies_stream_and_whole() -> None:
    for names in (
        ["stream-with-tools-1.sse", "stream-with-tools-2.sse", "stream-with-tools-3.sse"],
        ["generate-text-with-multiple-tools-1.json", "generate-text-with-multiple-tools-2.json"],
    ):
        for response in load_bodies([DATA / "prism/ollama" / n for n in names]).responses:
            stream = names[0].endswith(".sse")
            events = decode("ollama", response.body, stream=stream, size=13)
            assert summary(events) == PARSERS["ollama"](response)
            assert isinstance(events[-1], Finished)


def test_one_text_chunk_per_feed() -> None:
    """OpenAI and Ollama join the text of one network read into one TextChunk."""
    sse = b"".join(
        b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": w}}]}).encode()
        + b"\n\n"
        for w in ("one ", "two ", "three")
    )  # fmt: skip
    decoder = OpenAIDecoder()
    assert decoder.feed(sse) == [TextChunk("one two three")]
    lines = b"".join(
        json.dumps({"message": {"role": "assistant", "content": w}, "done": False}).encode() + b"\n"
        for w in ("one ", "two")
    )
    assert OllamaDecoder().feed(lines) == [TextChunk("one two")]


@pytest.mark.parametrize(
    ("api", "body", "error_type"),
    [
        ("openai", b'data: {"choices": []}\n\n', "incomplete_stream"),
        ("anthropic", b'event: ping\ndata: {"type": "ping"}\n\n', "incomplete_stream"),
        ("ollama", b'{"message": {"content": "x"}, "done": false}\n', "incomplete_stream"),
        ("gemini", b"", "empty_response"),
    ],
)
def test_a_stream_cut_short_raises_at_close(api: str, body: bytes, error_type: str) -> None:
    decoder = DECODERS[api](True)
    decoder.feed(body)
    with pytest.raises(ProviderError) as info:
        decoder.close()
    assert (info.value.provider, info.value.error_type) == (api, error_type)


def test_a_non_json_reply_is_reported() -> None:
    decoder = OpenAIDecoder(stream=False)
    decoder.feed(b"<html>proxy login</html>")
    with pytest.raises(ProviderError) as info:
        decoder.close()
    assert info.value.error_type == "malformed_response"
    assert "proxy login" in info.value.message


def test_usage_is_reported_once_per_reply_for_gemini() -> None:
    chunk = {"candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}],
             "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1}}  # fmt: skip
    body = (b"data: " + json.dumps(chunk).encode() + b"\n\n") * 2
    events = decode("gemini", body, stream=True, size=None)
    assert [type(e) for e in events] == [TextChunk, TextChunk, UsageReport, Finished]
