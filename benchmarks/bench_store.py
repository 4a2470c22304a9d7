"""What history costs: write time per round, and file size per 1,000 rounds.

The same runs (ScriptedModel, one instant tool call per round, then an answer)
go through ``Agent(store=None)`` and ``Agent(store=<temp file>)``. The in-memory
round is the baseline measured in the same process; the store's cost per round
is the difference, reported in ms and as a ratio to the baseline. Every round
is its own committed transaction (WAL, synchronous=NORMAL), as in real use.

A second measure times the writer alone saving one round from its
``RoundFinished`` event (one transaction, no loop around it), and the file size
is taken after 1,000 rounds with the WAL checkpointed into the main file.

A third measure is the per-write file check (is the open file still our SQLite
file?): an empty write transaction (the check included) on an open store, and,
side by side on the same file, the two ways of checking it: ``os.stat`` plus
opening, reading and closing the file (what nbagent did; closing a descriptor
drops the process's SQLite locks) and ``os.stat`` plus ``os.pread`` through a
descriptor held open (what it does now).

    python benchmarks/bench_store.py [rounds_per_run] [runs]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from nbagent import Agent, Conversation, Message, ToolCall, ToolResult, ToolRound, Usage, tool
from nbagent.events import RoundFinished, RunStarted
from nbagent.store import Store
from nbagent.testing import ScriptedModel, ScriptedRequest, call, reply


@tool
def lookup(city: str, day: int) -> dict[str, Any]:
    """A small, instant tool with a typical JSON-ish result."""
    return {"city": city, "day": day, "forecast": "sunny", "high_c": 21, "low_c": 12}


def make_model(rounds: int) -> ScriptedModel:
    def script(request: ScriptedRequest) -> Any:
        if request.round_index < rounds:
            return reply(
                "Looking that up.", calls=[call("lookup", city="Paris", day=request.round_index)]
            )
        return reply("It will be sunny all week, between 12 and 21 degrees.")

    return ScriptedModel(script)


async def runs(rounds: int, count: int, store: Any) -> float:
    """Seconds per round over ``count`` runs of ``rounds`` rounds each."""
    started = time.perf_counter()
    for _ in range(count):
        agent = Agent(make_model(rounds), tools=[lookup], max_rounds=rounds + 1, store=store)
        result = await agent.run("What is the weather in Paris this week?")
        assert len(result.rounds) == rounds
    return (time.perf_counter() - started) / (rounds * count)


def round_write_ms(store: Store, samples: int = 300) -> float:
    """Median ms of the writer saving one round from its RoundFinished event."""
    conversation = Conversation()
    conversation.messages += [Message("user", "hi"), Message("assistant", "", rounds=[])]
    writer = store.writer(conversation)
    writer.on_event(RunStarted("hi", "scripted", conversation.id))
    times = []
    answer = conversation.messages[-1]
    assert answer.rounds is not None
    for index in range(samples):
        call_ = ToolCall(f"call_{index}", "lookup", {"city": "Paris", "day": index})
        value = {"city": "Paris", "day": index, "forecast": "sunny"}
        result = ToolResult(call_.id, "lookup", True, str(value), duration_s=0.001, value=value)
        tool_round = ToolRound("Looking that up.", [call_], [result], Usage(120, 15))
        answer.rounds.append(tool_round)
        started = time.perf_counter()
        writer.on_event(RoundFinished(tool_round, index))
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def empty_write_us(store: Store, samples: int = 2000) -> float:
    """Median µs of one empty write transaction (BEGIN IMMEDIATE, COMMIT, the file check)."""
    assert store.write(lambda db: None)  # opens the file
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        store.write(lambda db: None)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def check_recipes_us(path: Path, samples: int = 5000) -> tuple[float, float]:
    """Median µs of the old check (stat + open/read/close) and the new (stat + pread)."""
    old, new = [], []
    fd = os.open(path, os.O_RDONLY)
    try:
        for _ in range(samples):  # interleaved, so drift hits both alike
            started = time.perf_counter()
            os.stat(path)
            with open(path, "rb") as file:
                file.read(16)
            old.append(time.perf_counter() - started)
            started = time.perf_counter()
            os.stat(path)
            os.pread(fd, 16, 0)
            new.append(time.perf_counter() - started)
    finally:
        os.close(fd)
    return statistics.median(old) * 1e6, statistics.median(new) * 1e6


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "history.db"
        store = Store(path)
        asyncio.run(runs(rounds, 3, None))  # warm-up: imports, first-use caches
        asyncio.run(runs(rounds, 3, store))
        store.close()
        path.unlink()
        for suffix in ("-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)

        memory, stored = [], []
        store = Store(path)
        for _ in range(5):  # alternate so drift affects both equally
            memory.append(asyncio.run(runs(rounds, count // 5, None)))
            stored.append(asyncio.run(runs(rounds, count // 5, store)))
        base, with_store = statistics.median(memory), statistics.median(stored)
        total_rounds = rounds * (count // 5) * 5
        store.close()  # checkpoints the WAL into the main file
        size = path.stat().st_size
        per_1000 = size / total_rounds * 1000

        direct = round_write_ms(Store(Path(folder) / "direct.db"))
        check_store = Store(Path(folder) / "check.db")
        empty = empty_write_us(check_store)
        old_check, new_check = check_recipes_us(check_store.path)
        check_store.close()

    cost = with_store - base
    print(f"rounds per run: {rounds}, rounds measured per mode: {total_rounds}")
    print(f"in-memory round (store=None):      {base * 1e3:8.3f} ms")
    print(f"round with history (store=file):   {with_store * 1e3:8.3f} ms")
    print(f"history write cost per round:      {cost * 1e3:8.3f} ms  (ratio {cost / base:.2f}x)")
    alone = direct / 1e3 / base
    print(f"one round written alone:          {direct:8.3f} ms  (ratio {alone:.2f}x)")
    print(f"empty write transaction (check in): {empty:8.1f} µs")
    print(f"file check, stat + open/read/close: {old_check:8.1f} µs  (the old check)")
    print(f"file check, stat + pread (held fd): {new_check:8.1f} µs  (the new check)")
    print(f"database size per 1,000 rounds:    {per_1000 / 1024:8.1f} KiB  ({size} bytes total)")


if __name__ == "__main__":
    main()
