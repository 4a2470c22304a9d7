"""``Agent.map`` against a hand-written asyncio loop, litellm, and its own limits.

Run: ``python benchmarks/bench_map.py [--rows 10000] [--big 100000] [--skip-litellm]``

The server is tests/support/servers.py's WireServer in a process of its own (so it
never competes with the client for the GIL), answering every Chat Completions
request at once, streamed as SSE. Measured in one run:

1. ``--rows`` single-round rows at concurrency 32: ``Agent.amap`` (journal on, failed
   rows' conversations in the history: the defaults) against a hand-written
   ``asyncio`` + ``httpx`` loop sending the same requests with the same concurrency
   and reading each SSE stream to its end (the baseline); also with
   ``history=True`` (every row's conversation written) and with no store at all.
   Goal: at most 1.3x. Then, when a venv with litellm exists (``--venv``; ``pip
   install litellm`` in it), litellm's ``batch_completion`` with 32 workers against
   the same server (LOTUS's ``sem_map`` calls it underneath); goal: nbagent faster.
2. Throughput with 2 tool rounds per row (rows per second, at concurrency 32).
3. ``--big`` rows on an instant in-process model (no HTTP): RSS sampled during the run
   (goal: flat within ~100 MB), then the same call again with every row in the
   journal (resume start-up, goal: under 2 s).
4. Journal cost per row: one ``Journal.save`` (its own transaction) against a
   bare ``INSERT`` + ``COMMIT`` on a plain sqlite3 connection (goal: under 1 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402
import pandas as pd  # noqa: E402

from nbagent import Agent  # noqa: E402
from nbagent.batch import BatchStats  # noqa: E402
from nbagent.messages import Usage  # noqa: E402
from nbagent.providers import Finished, TextChunk, UsageReport  # noqa: E402
from nbagent.store import Journal, JournalRow, Store  # noqa: E402
from tests.support.servers import RecordedRequest, Reply, ServerProcess  # noqa: E402

CONCURRENCY = 32
BASE = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "model": "gpt-bench"}


def _sse(text: str | None, call: tuple[str, str] | None = None) -> Reply:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**BASE, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events: list[Any] = [chunk({"role": "assistant", "content": ""})]
    if call is not None:
        name, args = call
        tool = {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": name, "arguments": args},
        }
        events += [chunk({"tool_calls": [tool]}), chunk({}, "tool_calls")]
    else:
        events += [chunk({"content": text}), chunk({}, "stop")]
    events += [{**BASE, "choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 5}}]
    events += ["[DONE]"]
    # One body, not one chunk per event: chunk-by-chunk writes meet delayed ACKs on
    # loopback (~40 ms a request), which would measure TCP rather than the clients.
    text = "".join(f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n" for e in events)
    return Reply(200, text, {"content-type": "text/event-stream"})


def responder(request: RecordedRequest) -> Reply:
    body = json.loads(request.body)
    messages = body["messages"]
    if body.get("tools") and sum(m["role"] == "tool" for m in messages) < 2:
        return _sse(None, ("lookup", '{"key": "k"}'))  # two tool rounds, then the answer
    if not body.get("stream"):
        completion = {
            "id": "chatcmpl-bench", "object": "chat.completion", "model": "gpt-bench",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "positive"}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
        }  # fmt: skip
        return Reply(200, completion)
    return _sse("positive")


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


# -- 1. single-round rows ----------------------------------------------------------------


async def raw_loop(url: str, prompts: list[str]) -> float:
    """The baseline: the same requests, 32 at a time, each SSE stream read to its end."""
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    gate = asyncio.Semaphore(CONCURRENCY)
    answers: list[str] = []
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:

        async def one(prompt: str) -> None:
            body = {
                "model": "gpt-bench",
                "messages": [{"role": "user", "content": prompt}],
                "stream": True,
                "stream_options": {"include_usage": True},
            }
            async with gate:
                async with client.stream(
                    "POST", url + "/chat/completions", json=body,
                    headers={"authorization": "Bearer sk-bench"},
                ) as response:  # fmt: skip
                    text = []
                    async for line in response.aiter_lines():
                        if line.startswith("data: ") and line != "data: [DONE]":
                            for choice in json.loads(line[6:])["choices"]:
                                text.append(choice["delta"].get("content") or "")
                    answers.append("".join(text))

        started = time.perf_counter()
        await asyncio.gather(*(one(p) for p in prompts))
        return time.perf_counter() - started


def line(label: str, took: float, rows: int, base: float) -> None:
    print(f"  {label:32s} {took:7.2f} s {rows / took:7.0f} rows/s  {took / base:5.2f}x")


async def nbagent_map(
    url: str, frame: pd.DataFrame, store: Any, tools: list[Any] = (), history: Any = "failed"
) -> float:
    agent = Agent(
        "openai:gpt-bench", base_url=url, api_key="sk-bench", env={}, tools=list(tools), store=store
    )
    started = time.perf_counter()
    out = await agent.amap(
        frame, "Classify: {text}", concurrency=CONCURRENCY, progress=False, history=history
    )
    took = time.perf_counter() - started
    assert out["error"].isna().all(), out["error"].dropna().head().tolist()
    return took


LITELLM = textwrap.dedent(
    """
    import sys, time, litellm
    url, rows = sys.argv[1], int(sys.argv[2])
    messages = [[{"role": "user", "content": f"Classify: row {i}"}] for i in range(rows)]
    started = time.perf_counter()
    out = litellm.batch_completion(model="openai/gpt-bench", messages=messages, api_base=url,
                                   api_key="sk-bench", max_workers=32, stream=False)
    took = time.perf_counter() - started
    ok = sum(1 for r in out if getattr(r, "choices", None))
    print(took, ok)
    """
)


def litellm_batch(venv: Path, url: str, rows: int) -> tuple[float, int] | None:
    python = venv / "bin" / "python"
    if not python.exists():
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as script:
        script.write(LITELLM)
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # no download at import
    done = subprocess.run(
        [str(python), script.name, url, str(rows)],
        capture_output=True,
        text=True,
        timeout=3600,
        env=env,
    )
    if done.returncode != 0:
        print("litellm failed:", done.stderr[-2000:])
        return None
    took, ok = done.stdout.split()[-2:]
    return float(took), int(ok)


# -- 3. memory and resume ----------------------------------------------------------------


class Sampler:
    """A progress display that samples RSS as rows finish (the Display seam)."""

    def __init__(self) -> None:
        self.samples: list[tuple[int, float]] = []

    def start(self, stats: BatchStats) -> None:
        self.samples.append((0, rss_mb()))

    def update(self, stats: BatchStats) -> None:
        if stats.finished % 5000 == 0:
            self.samples.append((stats.finished, rss_mb()))

    def finish(self, stats: BatchStats) -> None:
        self.samples.append((stats.finished, rss_mb()))


class Instant:
    """A provider answering "label" at once and keeping nothing (ScriptedModel keeps every
    request for tests, which would be the memory measured here)."""

    name = "instant"
    model = "label"
    asked = 0

    async def stream(self, request: Any) -> Any:
        Instant.asked += 1
        yield TextChunk("label")
        yield UsageReport(Usage(20, 5))
        yield Finished("stop")

    async def aclose(self) -> None:
        return None


async def big_run(rows: int, store: Path) -> tuple[list[tuple[int, float]], float, float]:
    agent = Agent(Instant(), tools=[], store=store)
    frame = pd.DataFrame({"text": [f"row {i}" for i in range(rows)]})
    sampler = Sampler()
    started = time.perf_counter()
    await agent.amap(
        frame, "Classify: {text}", concurrency=CONCURRENCY, progress=sampler, history=True
    )
    took = time.perf_counter() - started
    asked = Instant.asked
    again = Agent(Instant(), tools=[], store=store)
    started = time.perf_counter()
    out = await again.amap(frame, "Classify: {text}", concurrency=CONCURRENCY, progress=False)
    resume = time.perf_counter() - started
    assert (out["output"] == "label").all() and Instant.asked == asked  # nothing asked again
    return sampler.samples, took, resume


# -- 4. journal cost per row -----------------------------------------------------------------


def journal_cost(folder: Path, rows: int = 5000) -> tuple[float, float]:
    store = Store(folder / "journal.db")
    journal = Journal(store, "bench")
    journal.finished()  # opens and migrates the file
    started = time.perf_counter()
    for i in range(rows):
        journal.save(JournalRow(f"k{i}", True, '"label"', None, 0.0001, 25, 0, 0.01, "c_x"))
    ours = (time.perf_counter() - started) / rows
    db = sqlite3.connect(folder / "bare.db", isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("CREATE TABLE t (key TEXT PRIMARY KEY, output TEXT)")
    started = time.perf_counter()
    for i in range(rows):
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO t VALUES (?, ?)", (f"k{i}", '"label"'))
        db.execute("COMMIT")
    bare = (time.perf_counter() - started) / rows
    db.close()
    store.close()
    return ours, bare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--big", type=int, default=100_000)
    parser.add_argument("--venv", type=Path, default=Path("/tmp/i21-bench-venv"))
    parser.add_argument("--skip-litellm", action="store_true")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    server = ServerProcess(responder)
    url = server.url + "/v1"
    folder = Path(tempfile.mkdtemp(prefix="bench-map-"))
    print(f"load before: {os.getloadavg()[0]:.2f}")
    try:
        prompts = [f"Classify: row {i}" for i in range(args.rows)]
        frame = pd.DataFrame({"text": [f"row {i}" for i in range(args.rows)]})
        asyncio.run(raw_loop(url, prompts[:500]))  # warm-up: imports, connections
        # Interleaved repetitions, medians: the machine is shared, so a slow patch
        # hits every contender rather than one.
        times: dict[str, list[float]] = {"raw": [], "ours": [], "lean": [], "bare": []}
        for rep in range(args.reps):
            times["raw"].append(asyncio.run(raw_loop(url, prompts)))
            times["ours"].append(asyncio.run(nbagent_map(url, frame, folder / f"h1-{rep}.db")))
            every_db = folder / f"h1b-{rep}.db"
            times["lean"].append(asyncio.run(nbagent_map(url, frame, every_db, history=True)))
            times["bare"].append(asyncio.run(nbagent_map(url, frame, None)))
        raw, ours, lean, bare = (
            statistics.median(times[k]) for k in ("raw", "ours", "lean", "bare")
        )
        print(
            f"\n1. {args.rows:,} single-round rows, concurrency {CONCURRENCY} "
            f"(median of {args.reps})"
        )
        line("raw asyncio+httpx (baseline)", raw, args.rows, raw)
        line("nbagent map (goal <= 1.3x)", ours, args.rows, raw)
        line("  history=True (every row's run)", lean, args.rows, raw)
        line("  store=None (no journal)", bare, args.rows, raw)
        if not args.skip_litellm:
            measured = litellm_batch(args.venv, url, args.rows)
            if measured is None:
                print(f"  litellm batch_completion: not measured (no litellm in {args.venv})")
            else:
                took, ok = measured
                print(
                    f"  litellm batch_completion {took:7.2f} s  {args.rows / took:7.0f} rows/s  "
                    f"({ok} answers); nbagent is {took / ours:.1f}x faster"
                )
        tool_rows = min(args.rows, 2000)
        from nbagent.tools import tool

        @tool(register=False)
        def lookup(key: str) -> str:
            """Look a key up."""
            return "value"

        tools = asyncio.run(nbagent_map(url, frame.head(tool_rows), folder / "h2.db", [lookup]))
        print(
            f"\n2. {tool_rows:,} rows with 2 tool rounds each (3 requests a row): "
            f"{tools:.2f} s, {tool_rows / tools:.0f} rows/s, {3 * tool_rows / tools:.0f} requests/s"
        )
    finally:
        server.close()
    samples, took, resume = asyncio.run(big_run(args.big, folder / "h3.db"))
    first = samples[1][1] if len(samples) > 1 else samples[0][1]
    peak = max(mb for _, mb in samples)
    print(
        f"\n3. {args.big:,} rows on an instant in-process model, history=True: "
        f"{took:.1f} s ({args.big / took:.0f} rows/s)"
    )
    print(
        "  RSS (MB) by rows done: "
        + ", ".join(f"{n:,}: {mb:.0f}" for n, mb in samples[:: max(1, len(samples) // 8)])
    )
    print(f"  growth after the first 5,000 rows: {peak - first:.0f} MB (goal: flat within ~100 MB)")
    print(f"  resume start-up with all {args.big:,} rows journaled: {resume:.2f} s (goal < 2 s)")
    ours_row, bare_row = journal_cost(folder)
    print(
        f"\n4. journal write per row: {ours_row * 1000:.3f} ms (bare sqlite INSERT+COMMIT "
        f"{bare_row * 1000:.3f} ms, ratio {ours_row / bare_row:.2f}; goal < 1 ms)"
    )
    print(
        f"\nload after: {os.getloadavg()[0]:.2f}; "
        f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3:.0f} MB"
    )


if __name__ == "__main__":
    main()
