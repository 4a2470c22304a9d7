"""Per-round cost of a 10-round tool conversation against an instant loopback server.

Run: ``python benchmarks/bench_providers.py [--reps N]``

The server (tests/support/servers.py, a real HTTP/1.1 server on 127.0.0.1, in its
own process) answers every Chat Completions request at once: a tool call
``add(a, b)`` for rounds 1-9 and a short answer in round 10, as one JSON body or
as an SSE stream. Every contender sends the same requests; they run interleaved
(round-robin, one lap each in turn), so a busy machine's slow moments hit all of
them alike. Per round (one model request + one tool call):

* ``raw async``: an asyncio + httpx.AsyncClient loop with minimal JSON handling,
* ``nbagent async``: ``await Agent(OpenAIProvider).run(...)`` on the same loop
  (ratio to ``raw async``; goal: within 5 % non-streamed, <= 0.80x streamed),
* ``raw async+thread``: ``raw async`` running its tool on a worker thread
  (``asyncio.to_thread``), as nbagent must (no user code on the event loop's
  thread); informational: the floor that hop puts under ``nbagent async``,
* ``raw sync``: the same loop on a synchronous httpx.Client,
* ``run_sync``: ``Agent.run_sync`` (what ``%%agent`` uses), no history; its loop is the
  async one, so ``raw async+thread / raw sync`` (informational) is the floor under its ratio,
* ``history``: ``Agent.run_sync`` writing history to a temporary file
  (both ratios to ``raw sync``; goal: <= 2.0x non-streamed, <= 1.6x streamed),
* ``pydantic-ai``: pydantic_ai.Agent with its OpenAI chat model, if installed
  (``pip install 'nbagent[bench]'``; ratio to ``raw async``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402

from tests.support.servers import RecordedRequest, Reply, ServerProcess  # noqa: E402

ROUNDS = 10
PROMPT = "Add 1 and 2, then keep adding 1 until I say stop."
ANSWER = "The final total is 10."
USAGE = {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}
BASE = {"id": "chatcmpl-bench", "created": 1700000000, "model": "gpt-bench"}


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


TOOL_DECL = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    }
]


def _call(round_number: int) -> dict[str, Any]:
    return {
        "index": 0,
        "id": f"call_{round_number}",
        "type": "function",
        "function": {"name": "add", "arguments": json.dumps({"a": round_number, "b": 1})},
    }


def _json_reply(round_number: int) -> Reply:
    if round_number < ROUNDS:
        message = {"role": "assistant", "content": None, "tool_calls": [_call(round_number)]}
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": ANSWER}, "stop"
    body = {
        **BASE,
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": USAGE,
    }
    return Reply(200, json.dumps(body).encode())


def _sse_reply(round_number: int) -> Reply:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {**BASE, "object": "chat.completion.chunk", "choices": [choice]}

    events: list[Any] = [chunk({"role": "assistant", "content": ""})]
    if round_number < ROUNDS:
        call = _call(round_number)
        args = call["function"]["arguments"]
        first = {**call, "function": {"name": "add", "arguments": ""}}
        events.append(chunk({"tool_calls": [first]}))
        for piece in (args[:4], args[4:9], args[9:]):
            events.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
        events.append(chunk({}, "tool_calls"))
    else:
        events += [chunk({"content": w + " "}) for w in ANSWER.split()]
        events.append(chunk({}, "stop"))
    events += [{**BASE, "object": "chat.completion.chunk", "choices": [], "usage": USAGE}, "[DONE]"]
    # One write: an instant server, so the client's own cost is what gets measured.
    reply = Reply.sse(events)
    return Reply(200, b"".join(reply.chunks or []), {"content-type": "text/event-stream"})


def responder(request: RecordedRequest) -> Reply:
    body = json.loads(request.body)
    round_number = 1 + sum(1 for m in body["messages"] if m.get("role") == "tool")
    return _sse_reply(round_number) if body.get("stream") else _json_reply(round_number)


# --------------------------------------------------------------------------- clients
# The raw loops: no framework, minimal JSON handling; the sync and async twins share
# everything but the HTTP calls.


def _raw_body(messages: list[dict[str, Any]], stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "gpt-bench", "messages": messages, "tools": TOOL_DECL}
    if stream:
        body["stream"] = True
    return body


class _RawStream:
    """Collects one streamed reply's text and tool calls from its SSE lines."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}

    def feed(self, line: str) -> None:
        if not line.startswith("data: {"):
            return
        for choice in json.loads(line[6:])["choices"]:
            delta = choice["delta"]
            if delta.get("content"):
                self.text.append(delta["content"])
            for tc in delta.get("tool_calls") or ():
                slot = self.calls.setdefault(tc["index"], {"id": tc.get("id"), "args": ""})
                slot["name"] = tc["function"].get("name") or slot.get("name")
                slot["args"] += tc["function"]["arguments"]

    def message(self) -> dict[str, Any]:
        calls = [
            {"id": c["id"], "function": {"name": c["name"], "arguments": c["args"]}}
            for c in self.calls.values()
        ]
        return {"content": "".join(self.text), "tool_calls": calls}


def _raw_step(messages: list[dict[str, Any]], message: dict[str, Any]) -> str | None:
    """Run the reply's tool calls into ``messages``; the answer when there are none."""
    tool_calls = message.get("tool_calls") or []
    if not tool_calls:
        return message.get("content") or ""
    messages.append({"role": "assistant", "content": "", "tool_calls": tool_calls})
    for tc in tool_calls:
        args = json.loads(tc["function"]["arguments"])
        messages.append({"role": "tool", "tool_call_id": tc["id"], "content": str(add(**args))})
    return None


async def _raw_step_threaded(messages: list[dict[str, Any]], message: dict[str, Any]) -> str | None:
    """:func:`_raw_step` with each tool call run on a worker thread."""
    tool_calls = message.get("tool_calls") or []
    if not tool_calls:
        return message.get("content") or ""
    messages.append({"role": "assistant", "content": "", "tool_calls": tool_calls})
    for tc in tool_calls:
        args = json.loads(tc["function"]["arguments"])
        value = await asyncio.to_thread(add, **args)
        messages.append({"role": "tool", "tool_call_id": tc["id"], "content": str(value)})
    return None


def run_raw(url: str, client: httpx.Client, stream: bool) -> str:
    """The synchronous baseline."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    while True:
        body = _raw_body(messages, stream)
        if stream:
            collected = _RawStream()
            with client.stream("POST", url + "/chat/completions", json=body) as response:
                for line in response.iter_lines():
                    collected.feed(line)
            message = collected.message()
        else:
            response = client.post(url + "/chat/completions", json=body)
            message = response.json()["choices"][0]["message"]
        answer = _raw_step(messages, message)
        if answer is not None:
            return answer


async def run_raw_async(
    url: str, client: httpx.AsyncClient, stream: bool, threaded: bool = False
) -> str:
    """The asyncio baseline (``threaded``: each tool call on a worker thread)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    while True:
        body = _raw_body(messages, stream)
        if stream:
            collected = _RawStream()
            async with client.stream("POST", url + "/chat/completions", json=body) as response:
                async for line in response.aiter_lines():
                    collected.feed(line)
            message = collected.message()
        else:
            response = await client.post(url + "/chat/completions", json=body)
            message = response.json()["choices"][0]["message"]
        if threaded:
            answer = await _raw_step_threaded(messages, message)
        else:
            answer = _raw_step(messages, message)
        if answer is not None:
            return answer


def _agent(url: str, stream: bool, store: Any = None) -> Any:
    from nbagent import Agent
    from nbagent.providers.openai import OpenAIProvider
    from nbagent.tools import Tool

    provider = OpenAIProvider("gpt-bench", base_url=url, api_key="sk-bench", env={})
    return Agent(provider, tools=[Tool(add)], stream=stream, max_rounds=ROUNDS + 1, store=store)


def _check(result: Any) -> str:
    assert result.output.strip() == ANSWER and len(result.rounds) == ROUNDS - 1, result
    return str(result.output)


def make_nbagent(url: str, stream: bool) -> Callable[[], Any]:
    """``await agent.run(...)`` on the benchmark's asyncio loop."""
    agent = _agent(url, stream)

    async def once() -> str:
        agent.reset()
        return _check(await agent.run(PROMPT))

    return once


def make_run_sync(url: str, stream: bool, store: Any = None) -> Callable[[], Any]:
    """``agent.run_sync(...)`` from this (synchronous) thread, with or without history."""
    agent = _agent(url, stream, store)

    def once() -> str:
        agent.reset()
        return _check(agent.run_sync(PROMPT))

    return once


def make_pydantic_ai(url: str, stream: bool) -> Callable[[], Any] | None:
    try:
        from pydantic_ai import Agent as PAgent
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider as POpenAIProvider
    except ImportError:
        return None
    model = OpenAIChatModel("gpt-bench", provider=POpenAIProvider(base_url=url, api_key="sk-bench"))
    agent = PAgent(model, tools=[add])

    async def once() -> str:
        if stream:
            async with agent.run_stream(PROMPT) as result:
                output = await result.get_output()
        else:
            output = (await agent.run(PROMPT)).output
        assert output.strip() == ANSWER, output
        return output

    return once


# --------------------------------------------------------------------------- timing


def _measure(
    loop: asyncio.AbstractEventLoop, contenders: dict[str, Callable[[], Any]], reps: int
) -> dict[str, float]:
    """Median seconds per round of each contender, run round-robin (a busy machine's
    slow moments then hit every contender alike)."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for rep in range(reps + 1):
        for name, fn in contenders.items():
            started = time.perf_counter()
            outcome = fn()
            if asyncio.iscoroutine(outcome):
                loop.run_until_complete(outcome)
            if rep:  # the first lap warms up connections and imports
                times[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) / ROUNDS for name, values in times.items()}


RATIOS = (
    # (contender, baseline, goal non-streamed, goal streamed)
    ("nbagent async", "raw async", 1.05, 0.80),
    ("raw async+thread", "raw async", None, None),
    ("nbagent async", "raw async+thread", None, None),
    ("raw async+thread", "raw sync", None, None),
    ("run_sync", "raw sync", 2.0, 1.6),
    ("history", "raw sync", 2.0, 1.6),
    ("pydantic-ai", "raw async", None, None),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    server = ServerProcess(responder)
    url = server.url + "/v1"
    loop = asyncio.new_event_loop()
    results: dict[bool, dict[str, float]] = {}
    try:
        with tempfile.TemporaryDirectory() as folder:
            for stream in (False, True):
                client = httpx.Client()
                async_client = loop.run_until_complete(_async_client())
                history = Path(folder) / f"history-{stream}.db"
                contenders: dict[str, Callable[[], Any]] = {
                    "raw async": lambda c=async_client, s=stream: run_raw_async(url, c, s),
                    "nbagent async": make_nbagent(url, stream),
                    "raw async+thread": lambda c=async_client, s=stream: run_raw_async(
                        url, c, s, threaded=True
                    ),
                    "raw sync": lambda c=client, s=stream: run_raw(url, c, s),
                    "run_sync": make_run_sync(url, stream),
                    "history": make_run_sync(url, stream, store=history),
                }
                pai_fn = make_pydantic_ai(url, stream)
                if pai_fn is not None:
                    contenders["pydantic-ai"] = pai_fn
                results[stream] = _measure(loop, contenders, args.reps)
                client.close()
                loop.run_until_complete(async_client.aclose())
    finally:
        loop.close()
        server.close()
    print(f"10-round tool conversation, ms per round (median of {args.reps} interleaved runs)")
    for stream, label in ((False, "json"), (True, "stream")):
        row = results[stream]
        times = "  ".join(f"{name} {ms * 1000:.3f}" for name, ms in row.items())
        print(f"{label:6} {times}")
    print(f"{'ratio':34} {'json':>12} {'stream':>12}")
    for name, base, goal_json, goal_stream in RATIOS:
        if name not in results[False]:
            continue
        cells = []
        for stream, goal in ((False, goal_json), (True, goal_stream)):
            ratio = results[stream][name] / results[stream][base]
            mark = "" if goal is None else (" ok" if ratio <= goal else " >" + f"{goal:.2f}")
            cells.append(f"{ratio:.2f}x{mark}")
        print(f"{name + ' / ' + base:34} {cells[0]:>12} {cells[1]:>12}")


async def _async_client() -> httpx.AsyncClient:
    return httpx.AsyncClient()  # made on the loop that will use it


if __name__ == "__main__":
    main()
