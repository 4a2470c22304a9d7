"""Stream parsing throughput in MB/s, per wire format.

Run: ``python benchmarks/bench_stream_parsing.py [--mb 20]``

Each stream is built from the recorded cassettes' shapes (OpenAI chunks with
tool-call deltas and ``obfuscation`` padding, Anthropic ``event:``/``data:`` pairs
with trailing-space padding and pings, Ollama NDJSON lines) repeated to about
``--mb`` megabytes, then fed in 16 KiB pieces (what httpx hands over). Measured:

* ``parser``: nbagent's SSEParser / NDJSONParser plus ``json.loads`` of every payload;
* ``session``: the whole ``HttpSession.post`` path over an in-memory httpx transport,
  each read fed to a framing decoder that parses and checks every payload (async
  iteration and error checks included; what an adapter does minus its own decoding);
* ``adapter`` (OpenAI, Anthropic, Ollama): provider events out of ``provider.stream``;
* ``baseline``: the naive loop, ``bytes.split`` + stdlib ``json.loads`` of each payload,
  no framing rules (ratio column: baseline time / parser time, > 1 = faster).

Goal: >= 50 MB/s for every format.

A second table measures text-format tool-call recognition (``providers/text_calls.py``):
the OpenAI and Ollama adapters with tools offered, recognition on vs off
(``text_tool_calls=False``), interleaved in one run; goal: it costs under 5%.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402
from pydantic_core import from_json  # noqa: E402

from nbagent.messages import Message, ToolSpec  # noqa: E402
from nbagent.providers import ModelRequest  # noqa: E402
from nbagent.providers.base import ProviderEvent  # noqa: E402
from nbagent.providers.http import (  # noqa: E402
    HttpSession,
    NDJSONDecoder,
    NDJSONParser,
    SSEDecoder,
    SSEParser,
)
from nbagent.providers.ollama import OllamaProvider  # noqa: E402
from nbagent.providers.openai import OpenAIProvider  # noqa: E402
from nbagent.providers.text_calls import TextCallDecoder  # noqa: E402

PIECE = 16 * 1024


def openai_stream(size: int) -> bytes:
    base = {"id": "chatcmpl-D", "object": "chat.completion.chunk", "created": 1, "model": "gpt-5"}

    def data(delta: dict[str, Any], finish: str | None = None) -> bytes:
        chunk = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                 "usage": None, "obfuscation": "x8Kp2"}  # fmt: skip
        return b"data: " + json.dumps(chunk).encode() + b"\n\n"

    block = [data({"role": "assistant", "content": ""})]
    block += [data({"content": f"word{i} "}) for i in range(40)]
    call = {"index": 0, "id": "call_ZR5U", "type": "function",
            "function": {"name": "weather", "arguments": ""}}  # fmt: skip
    block.append(data({"tool_calls": [call]}))
    for piece in ('{"', "location", '":"', "Florence", ", Italy", '"}'):
        block.append(data({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    unit = b"".join(block)
    body = unit * max(1, size // len(unit))
    tail = data({}, "tool_calls") + b'data: {"choices": [], "usage": {"prompt_tokens": 5}}\n\n'
    return body + tail + b"data: [DONE]\n\n"


def anthropic_stream(size: int) -> bytes:
    def event(name: str, payload: dict[str, Any], pad: int = 0) -> bytes:
        text = json.dumps(payload, separators=(",", ":"))
        if pad:
            text = text[:-1] + " " * pad + "}"
        return f"event: {name}\ndata: {text}\n\n".encode()

    block = [event("content_block_start", {"type": "content_block_start", "index": 0,
                   "content_block": {"type": "text", "text": ""}})]  # fmt: skip
    block += [
        event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": f"word{i} "},
            },
            pad=i % 7,
        )  # fmt: skip
        for i in range(40)
    ]
    block += [event("ping", {"type": "ping"}), event("content_block_stop",
              {"type": "content_block_stop", "index": 0}, pad=3)]  # fmt: skip
    unit = b"".join(block)
    start = event("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude", "content": [],
        "usage": {"input_tokens": 5, "output_tokens": 1}}})  # fmt: skip
    end = event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 9}})  # fmt: skip
    end += event("message_stop", {"type": "message_stop"})
    return start + unit * max(1, size // len(unit)) + end


def ndjson_stream(size: int) -> bytes:
    line = {"model": "qwen3:14b", "created_at": "2025-06-09T17:58:55.337823Z",
            "message": {"role": "assistant", "content": "word "}, "done": False}  # fmt: skip
    unit = b"".join(
        json.dumps({**line, "message": {"role": "assistant", "content": f"w{i} "}}).encode() + b"\n"
        for i in range(50)
    )
    body = unit * max(1, size // len(unit))
    done = {"model": "qwen3:14b", "message": {"role": "assistant", "content": ""}, "done": True,
            "done_reason": "stop", "prompt_eval_count": 5, "eval_count": 9}  # fmt: skip
    return body + json.dumps(done).encode() + b"\n"


def pieces(data: bytes) -> list[bytes]:
    return [data[i : i + PIECE] for i in range(0, len(data), PIECE)]


# --------------------------------------------------------------------------- contenders


def parse_sse(chunks: list[bytes]) -> int:
    parser, loads, count = SSEParser(), from_json, 0  # as SSEDecoder does
    for chunk in chunks:
        for event in parser.feed(chunk):
            if event.data[:1] == "{":
                loads(event.data)
            count += 1
    return count


def parse_ndjson(chunks: list[bytes]) -> int:
    parser, count = NDJSONParser(), 0
    for chunk in chunks:
        count += len(parser.feed(chunk))
    return count


def baseline_sse(data: bytes) -> int:
    count = 0
    for block in data.split(b"\n\n"):
        at = block.find(b"data: {")
        if at >= 0:
            json.loads(block[at + 6 :])
            count += 1
    return count


def baseline_ndjson(data: bytes) -> int:
    lines = data.split(b"\n")
    for line in lines:
        if line:
            json.loads(line)
    return len(lines)


def _client(data: bytes, content_type: str) -> httpx.AsyncClient:
    chunks = pieces(data)

    async def body() -> Any:
        for chunk in chunks:
            yield chunk

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": content_type}, content=body())

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


class _CountSSE(SSEDecoder):
    """Framing, JSON and error checks of an SSE decoder; counts payloads instead of decoding."""

    count = 0

    def decode(self, items: list[Any]) -> list[ProviderEvent]:
        self.count += len(items)
        return []


class _CountNDJSON(NDJSONDecoder):
    count = 0

    def decode(self, items: list[Any]) -> list[ProviderEvent]:
        self.count += len(items)
        return []


async def _session(data: bytes, content_type: str, decoder: _CountSSE | _CountNDJSON) -> int:
    async with _client(data, content_type) as client:
        http = HttpSession("bench", base_url="http://bench", http_client=client)
        async for piece in http.post_stream("/x", {}):
            decoder.feed(piece)
        decoder.close()
        return decoder.count


async def session_sse(data: bytes) -> int:
    return await _session(data, "text/event-stream", _CountSSE())


async def session_ndjson(data: bytes) -> int:
    return await _session(data, "application/x-ndjson", _CountNDJSON())


async def adapter(provider_cls: type, data: bytes, content_type: str) -> int:
    async with _client(data, content_type) as client:
        provider = provider_cls(
            "bench", base_url="http://127.0.0.1:1/v1", api_key="k", http_client=client, env={}
        )
        request = ModelRequest(system=None, messages=[Message("user", "x")], stream=True)
        return sum([1 async for _ in provider.stream(request)])


async def adapter_with_tools(provider_cls: type, data: bytes, content_type: str, on: bool) -> int:
    async with _client(data, content_type) as client:
        provider = provider_cls(
            "bench", base_url="http://127.0.0.1:1/v1", api_key="k", http_client=client, env={}
        )
        spec = ToolSpec("weather", "Weather.", {"type": "object", "properties": {}})
        request = ModelRequest(
            system=None, messages=[Message("user", "x")], tools=[spec], text_tool_calls=on
        )
        return sum([1 async for _ in provider.stream(request)])


def decode_only(provider_cls: type, chunks: list[bytes], on: bool) -> float:
    """Seconds to decode ``chunks`` with the adapter's decoder (no HTTP, no event loop)."""
    provider = provider_cls("bench", base_url="http://127.0.0.1:1/v1", api_key="k", env={})
    spec = ToolSpec("weather", "Weather.", {"type": "object", "properties": {}})
    request = ModelRequest(
        system=None, messages=[Message("user", "x")], tools=[spec], text_tool_calls=on
    )
    return _time_feeding(provider.decoder(request), chunks)


class _Replay:
    """A decoder replaying recorded event batches: isolates the text-call layer's own cost."""

    error = None

    def __init__(self, batches: list[list[ProviderEvent]]) -> None:
        self.batches = batches
        self.index = 0

    def feed(self, chunk: bytes) -> list[ProviderEvent]:
        self.index += 1
        return self.batches[self.index - 1]

    def close(self) -> list[ProviderEvent]:
        return self.batches[-1]


def layer_only(provider_cls: type, chunks: list[bytes]) -> float:
    """Seconds the text-call layer alone takes over the adapter's events for ``chunks``."""
    provider = provider_cls("bench", base_url="http://127.0.0.1:1/v1", api_key="k", env={})
    request = ModelRequest(system=None, messages=[Message("user", "x")], text_tool_calls=False)
    inner = provider.decoder(request)
    batches = [inner.feed(chunk) for chunk in chunks] + [inner.close()]
    return _time_feeding(TextCallDecoder(_Replay(batches), ["weather"], None), chunks)


def _time_feeding(decoder: Any, chunks: list[bytes]) -> float:
    """Seconds ``decoder`` takes over ``chunks`` and its close, with the collector off."""
    gc.collect()
    gc.disable()  # collections land on whichever variant runs then: keep them out
    try:
        started = time.perf_counter()
        for chunk in chunks:
            decoder.feed(chunk)
        decoder.close()
        return time.perf_counter() - started
    finally:
        gc.enable()


def text_call_overhead(streams: dict[str, bytes], repeat: int) -> None:
    """Recognition on vs off, alternating runs (best of ``repeat`` each, 3x for decoders)."""
    print("\ntext-format call recognition (tools offered), MB/s; cost = on/off - 1")
    print("layer = the text-call layer's own time over the decoder's events / decoding time")
    head = ("format", "dec off", "dec on", "cost", "adapt off", "adapt on", "cost", "layer")
    print("{:16} {:>8} {:>8} {:>7} {:>9} {:>9} {:>7} {:>7}".format(*head))
    cases = [("SSE OpenAI", OpenAIProvider, "text/event-stream"),
             ("NDJSON Ollama", OllamaProvider, "application/x-ndjson")]  # fmt: skip
    for name, cls, content_type in cases:
        data = streams[name]
        small = (openai_stream if "SSE" in name else ndjson_stream)(1 << 20)
        chunks = pieces(small)  # 1 MiB, decoded many times: the min is stable
        decode: dict[bool, list[float]] = {False: [], True: []}
        layer: list[float] = []
        for _ in range(repeat * 10):  # interleaved, so load changes hit both alike
            for on in (False, True):
                decode[on].append(decode_only(cls, chunks, on))
            layer.append(layer_only(cls, chunks))
        adapt: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(repeat):
            for on in (False, True):
                adapt[on].append(
                    best_of(lambda c=cls, d=data, t=content_type, o=on:  # type: ignore[misc]
                            adapter_with_tools(c, d, t, o), 1)
                )  # fmt: skip
        megabytes = len(data) / 1e6
        small_mb = sum(map(len, chunks)) / 1e6
        d_off, d_on = (
            min(decode[False]) / small_mb * megabytes,
            min(decode[True]) / small_mb * megabytes,
        )
        a_off, a_on = min(adapt[False]), min(adapt[True])
        print(
            f"{name:16} {megabytes / d_off:8.0f} {megabytes / d_on:8.0f} {d_on / d_off - 1:7.1%} "
            f"{megabytes / a_off:9.0f} {megabytes / a_on:9.0f} {a_on / a_off - 1:7.1%} "
            f"{min(layer) / min(decode[False]):7.1%}"
        )


def _anthropic() -> type:
    from nbagent.providers.anthropic import AnthropicProvider

    return AnthropicProvider


def best_of(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        outcome = fn()
        if asyncio.iscoroutine(outcome):
            asyncio.run(outcome)
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=20.0)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    size = int(args.mb * 1024 * 1024)
    streams = {
        "SSE OpenAI": openai_stream(size),
        "SSE Anthropic-like": anthropic_stream(size),
        "NDJSON Ollama": ndjson_stream(size),
    }
    print(f"stream parsing throughput, MB/s (best of {args.repeat}, {PIECE // 1024} KiB pieces)")
    print("{:20} {:>8} {:>9} {:>9} {:>9} {:>8}".format(
        "format", "MB", "parser", "session", "adapter", "vs base"))  # fmt: skip
    for name, data in streams.items():
        chunks = pieces(data)
        megabytes = len(data) / 1e6
        if name.startswith("SSE"):
            parse = best_of(lambda c=chunks: parse_sse(c), args.repeat)
            base = best_of(lambda d=data: baseline_sse(d), args.repeat)
            session = best_of(lambda d=data: session_sse(d), args.repeat)
        else:
            parse = best_of(lambda c=chunks: parse_ndjson(c), args.repeat)
            base = best_of(lambda d=data: baseline_ndjson(d), args.repeat)
            session = best_of(lambda d=data: session_ndjson(d), args.repeat)
        adapter_time = None
        if name == "SSE OpenAI":
            adapter_time = best_of(
                lambda d=data: adapter(OpenAIProvider, d, "text/event-stream"), args.repeat
            )
        elif name == "SSE Anthropic-like":
            adapter_time = best_of(
                lambda d=data: adapter(_anthropic(), d, "text/event-stream"), args.repeat
            )
        elif name == "NDJSON Ollama":
            adapter_time = best_of(
                lambda d=data: adapter(OllamaProvider, d, "application/x-ndjson"), args.repeat
            )
        adapter_text = f"{megabytes / adapter_time:9.0f}" if adapter_time else f"{'-':>9}"
        print(
            f"{name:20} {megabytes:8.1f} {megabytes / parse:9.0f} {megabytes / session:9.0f} "
            f"{adapter_text} {base / parse:7.2f}x"
        )
    text_call_overhead(streams, args.repeat)


if __name__ == "__main__":
    main()
