"""Loop overhead per round: nbagent's loop vs a hand-written minimal loop.

Both drive the same ScriptedModel through the same rounds (one instant tool call
per round, then a final answer) and append the same values to a conversation.
The difference per round is what nbagent's loop costs on top: events, status
lines, validation, budgets, logging calls, history bookkeeping. Goal: < 1 ms.

    python benchmarks/bench_loop_overhead.py [rounds_per_run] [runs]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

from nbagent import Agent, Conversation, Message, ToolResult, ToolRound, tool
from nbagent.providers.base import ModelRequest, ToolCallReady, UsageReport
from nbagent.testing import ScriptedModel, call, reply


@tool
def instant(n: int) -> int:
    """Returns n + 1."""
    return n + 1


def make_model(rounds: int) -> ScriptedModel:
    def script(request):
        if request.round_index < rounds:
            return reply(calls=[call("instant", n=request.round_index)])
        return reply("done")

    return ScriptedModel(script)


async def nbagent_run(rounds: int) -> float:
    agent = Agent(make_model(rounds), tools=[instant], max_rounds=rounds + 1, store=None)
    started = time.perf_counter()
    result = await agent.run("go")
    elapsed = time.perf_counter() - started
    assert result.stop_reason == "complete" and len(result.rounds) == rounds
    return elapsed


async def minimal_run(rounds: int, *, threaded: bool = False) -> float:
    """The least a loop can do: request, collect calls, call the function, append.

    ``threaded`` calls the tool through ``asyncio.to_thread`` (as any loop that must
    not block on sync tools does), otherwise inline.
    """
    model = make_model(rounds)
    specs = [instant.spec]
    conversation = Conversation()
    started = time.perf_counter()
    conversation.messages.append(Message("user", "go"))
    message = Message("assistant", "", rounds=[])
    conversation.messages.append(message)
    while True:
        request = ModelRequest(system=None, messages=conversation.messages, tools=specs)
        calls = []
        async for event in model.stream(request):
            if isinstance(event, ToolCallReady):
                calls.append(event.call)
            elif isinstance(event, UsageReport):
                pass
        if not calls:
            break
        results = []
        for c in calls:
            if threaded:
                value = await asyncio.to_thread(instant.fn, **c.arguments)
            else:
                value = instant.fn(**c.arguments)
            results.append(ToolResult(c.id, c.name, True, str(value), value=value))
        message.rounds.append(ToolRound(None, calls, results))  # type: ignore[union-attr]
    elapsed = time.perf_counter() - started
    assert len(message.rounds or []) == rounds
    return elapsed


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 30

    async def measure() -> tuple[list[float], list[float], list[float]]:
        ours, base, threaded = [], [], []
        for _ in range(3):  # warm-up
            await nbagent_run(rounds)
            await minimal_run(rounds)
            await minimal_run(rounds, threaded=True)
        for _ in range(runs):  # alternate so machine noise hits all alike
            ours.append(await nbagent_run(rounds))
            base.append(await minimal_run(rounds))
            threaded.append(await minimal_run(rounds, threaded=True))
        return ours, base, threaded

    ours, base, threaded = asyncio.run(measure())
    ours_med, base_med = statistics.median(ours), statistics.median(base)
    threaded_med = statistics.median(threaded)
    per_round = (ours_med - base_med) / (rounds + 1) * 1000  # +1: the final request
    print(f"{rounds} tool rounds + final answer, median of {runs} runs")
    print(f"  minimal hand-written loop, inline tool calls  {base_med * 1000:8.2f} ms  1.00x")
    print(
        f"  minimal loop, tools via asyncio.to_thread  {threaded_med * 1000:8.2f} ms  "
        f"{threaded_med / base_med:5.2f}x"
    )
    print(
        f"  nbagent loop                                {ours_med * 1000:8.2f} ms  "
        f"{ours_med / base_med:5.2f}x"
    )
    verdict = "OK" if per_round < 1 else "MISSED"
    print(f"overhead per round vs inline loop = {per_round:.3f} ms (goal < 1 ms): {verdict}")
    vs_threaded = (ours_med - threaded_med) / (rounds + 1) * 1000
    print(f"overhead per round vs to_thread loop = {vs_threaded:.3f} ms")

    sync_started = time.perf_counter()
    agent = Agent(make_model(rounds), tools=[instant], max_rounds=rounds + 1, store=None)
    agent.run_sync("go")
    sync_ms = (time.perf_counter() - sync_started) * 1000
    print(f"  (run_sync through the background loop, one run: {sync_ms:.2f} ms)")


if __name__ == "__main__":
    main()
