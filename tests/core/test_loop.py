"""The agent loop: rounds, stop conditions, events, history invariant."""

from __future__ import annotations

import asyncio
import threading
import time

import pandas as pd
import pytest

from nbagent import (
    Agent,
    RoundFinished,
    RunFinished,
    RunStarted,
    Status,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolError,
    tool,
)
from nbagent.errors import ProviderError
from nbagent.testing import ScriptedModel, call, reply

from .helpers import assert_history_valid


@tool
def sales_by_region(region: str) -> pd.DataFrame:
    """Daily sales of one region."""
    days = 500
    return pd.DataFrame(
        {
            "day": pd.date_range("2024-01-01", periods=days, freq="D"),
            "region": [region] * days,
            "units": range(days),
        }
    )


def test_three_round_dataframe_run_sends_compact_table_and_keeps_frames():
    def script(request):
        n = request.round_index
        if n < 3:
            return reply(f"Looking at region {n}.", [call("sales_by_region", region=f"r{n}")])
        return reply("Region r2 sold the most.")

    model = ScriptedModel(script)
    agent = Agent(model, tools=[sales_by_region])
    result = agent.run_sync("Which region sold most?")

    assert result.stop_reason == "complete"
    assert result.output == "Region r2 sold the most."
    assert len(result.rounds) == 3
    assert len(model.requests) == 4
    # What the model received as the third tool result: shape, dtypes, head rows only.
    seen = model.requests[3].tool_results[-1].content
    assert seen.startswith("DataFrame shape=(500, 3); dtypes: day: datetime64")
    assert "region: " in seen and "units: int64" in seen
    assert "(first 10 of 500 rows)" in seen
    assert "2024-01-01,r2,0" in seen
    assert "2024-01-10,r2,9" in seen
    assert "2024-01-11" not in seen  # never the whole frame
    assert len(seen) < 1000
    # The Python values stay DataFrames, in call order.
    frames = result.tool_results
    assert [type(f) for f in frames] == [pd.DataFrame] * 3
    assert [f["region"].iloc[0] for f in frames] == ["r0", "r1", "r2"]
    assert frames[0].shape == (500, 3)
    # Round text and calls are kept per round.
    assert [r.assistant_text for r in result.rounds] == [
        f"Looking at region {i}." for i in range(3)
    ]
    assert result.rounds[1].calls[0].arguments == {"region": "r1"}
    assert_history_valid(agent.conversation)


def test_usage_totals_add_up_per_round():
    def script(request):
        if request.round_index < 2:
            return reply(calls=[call("sales_by_region", region="x")])
        return reply("done")

    agent = Agent(ScriptedModel(script), tools=[sales_by_region])
    result = agent.run_sync("go")
    per_round = sum(r.usage.input_tokens for r in result.rounds)
    assert result.usage.input_tokens > per_round > 0  # final request counts too
    assert result.usage.output_tokens >= 3
    assert result.usage.total_tokens == result.usage.input_tokens + result.usage.output_tokens


def test_max_rounds_forces_a_final_answer_without_tools():
    def always_tools(request):
        if request.tool_choice == "none":
            return reply(f"Final from {len(request.tool_results)} results.")
        return reply(calls=[call("sales_by_region", region="north")])

    model = ScriptedModel(always_tools)
    agent = Agent(model, tools=[sales_by_region], max_rounds=2)
    result = agent.run_sync("Keep going")

    assert result.stop_reason == "max_rounds"
    assert len(result.rounds) == 2
    assert len(model.requests) == 3
    assert [r.tool_choice for r in model.requests] == ["auto", "auto", "none"]
    final = model.requests[-1]
    assert final.final_instruction is not None
    assert "maximum number of tool rounds" in final.final_instruction
    assert "Do not call any more tools" in final.final_instruction
    assert final.tools == ["sales_by_region"]  # tools still described, just forbidden
    assert result.output == "Final from 2 results."
    assert_history_valid(agent.conversation)


def test_forced_final_answer_is_never_empty():
    # A model that ignores the instruction and sends only (dropped) calls.
    model = ScriptedModel(lambda r: reply(calls=[call("sales_by_region", region="a")]))
    agent = Agent(model, tools=[sales_by_region], max_rounds=1)
    result = agent.run_sync("go")
    assert result.stop_reason == "max_rounds"
    assert result.output.startswith("Stopped after 1 tool rounds without a final answer.")
    assert "sales_by_region: DataFrame shape=(500, 3)" in result.output
    assert_history_valid(agent.conversation)


@tool
def explode(what: str) -> str:
    """Always fails."""
    raise ValueError(f"cannot handle {what}")


def test_raising_tool_error_reaches_model_then_tool_errors_stop():
    model = ScriptedModel(lambda r: reply(calls=[call("explode", what=f"x{r.round_index}")]))
    agent = Agent(model, tools=[explode])
    result = agent.run_sync("try")

    assert result.stop_reason == "tool_errors"
    assert len(result.rounds) == 3
    # The model saw each error as a tool result.
    seen = model.requests[1].tool_results[0]
    assert not seen.ok
    assert seen.content == "Error: ValueError: cannot handle x0"
    assert "Traceback" in (result.rounds[0].results[0].traceback or "")
    assert "Traceback" not in seen.content
    # The model saw the last errors too: a final request without tools asked for its
    # answer (it wrote none, so the answer says what failed and why).
    assert model.requests[3].tool_choice == "none"
    assert "3 consecutive rounds of failed tool calls" in result.output
    for i in range(3):
        assert f"explode: ValueError: cannot handle x{i}" in result.output
    assert_history_valid(agent.conversation)


def test_a_success_resets_the_consecutive_error_count():
    @tool
    def flaky(n: int) -> int:
        """Fails on odd numbers."""
        if n % 2:
            raise RuntimeError("odd")
        return n

    def script(request):
        n = request.round_index
        return reply(calls=[call("flaky", n=n)]) if n < 6 else reply("ok")

    result = Agent(ScriptedModel(script), tools=[flaky]).run_sync("go")
    assert result.stop_reason == "complete"
    assert [r.results[0].ok for r in result.rounds] == [True, False] * 3


def test_strict_mode_raises_tool_error_and_keeps_history_valid():
    model = ScriptedModel(lambda r: reply(calls=[call("explode", what="y")]))
    agent = Agent(model, tools=[explode], strict=True)
    with pytest.raises(ToolError, match="tool 'explode' failed: ValueError: cannot handle y"):
        agent.run_sync("try")
    assert_history_valid(agent.conversation)
    assert "[run failed: ToolError" in agent.conversation.messages[-1].content
    agent.provider.script = lambda r: reply("fine now")  # type: ignore[attr-defined]
    assert agent.run_sync("again").output == "fine now"


def test_provider_error_propagates_and_next_run_works():
    state = {"fail": True}

    def script(request):
        if state["fail"]:
            raise ProviderError("scripted", 500, "server_error", "boom")
        return "recovered"

    agent = Agent(ScriptedModel(script))
    with pytest.raises(ProviderError, match="scripted HTTP 500 server_error: boom"):
        agent.run_sync("hi")
    assert agent.last_result is not None and agent.last_result.stop_reason == "error"
    assert_history_valid(agent.conversation)
    state["fail"] = False
    assert agent.run_sync("hi").output == "recovered"
    assert_history_valid(agent.conversation)


@tool
def slow(seconds: float) -> str:
    """Sleeps."""
    time.sleep(seconds)
    return "slept"


def test_run_timeout_leaves_valid_history_and_next_run_works():
    def script(request):
        if request.prompt == "slow please":
            return reply(calls=[call("slow", seconds=5), call("sales_by_region", region="z")])
        return reply("quick answer")

    model = ScriptedModel(script)
    agent = Agent(model, tools=[slow, sales_by_region], timeout=0.5)
    started = time.perf_counter()
    result = agent.run_sync("slow please")
    assert time.perf_counter() - started < 3  # not blocked by the sleeping thread
    assert result.stop_reason == "timeout"
    assert result.output == "[run timed out]"
    results = result.rounds[0].results
    # The fast call's real result is kept; the stuck one got a synthetic result.
    assert results[0].ok is False  # it had started: it says so, and for how long
    assert results[0].error.startswith("the run timed out while running after ")
    assert results[1].ok is True and results[1].content.startswith("DataFrame shape=(500, 3)")
    assert_history_valid(agent.conversation)

    second = agent.run_sync("now quick")
    assert second.stop_reason == "complete" and second.output == "quick answer"
    # The model received the interrupted round with a result for every call.
    last_request = model.requests[-1]
    old_round = last_request.messages[1].rounds[0]  # type: ignore[index]
    assert [r.call_id for r in old_round.results] == [c.id for c in old_round.calls]
    assert_history_valid(agent.conversation)


def test_timeout_during_streaming_keeps_partial_text():
    model = ScriptedModel(lambda r: "a long answer " * 50, chunk_size=5, delay=0.02)
    agent = Agent(model, timeout=0.3)
    result = agent.run_sync("talk")
    assert result.stop_reason == "timeout"
    assert result.output.startswith("a long answer")
    assert result.output.endswith("[run timed out]")
    assert_history_valid(agent.conversation)


async def test_cancel_mid_tool_leaves_valid_history_and_next_run_works():
    # Async tools run on a worker event loop (never the run's): signal across threads.
    started = threading.Event()

    @tool
    async def wait_forever() -> str:
        """Never returns on its own."""
        started.set()
        await asyncio.sleep(3600)
        return "never"

    def script(request):
        if request.prompt == "first":
            return reply("Calling.", [call("wait_forever")])
        return reply("second ok")

    agent = Agent(ScriptedModel(script), tools=[wait_forever])

    async def stop_soon():
        await asyncio.to_thread(started.wait, 30)
        agent.cancel()

    stopper = asyncio.create_task(stop_soon())
    result = await agent.run("first")
    await stopper
    assert result.stop_reason == "cancelled"
    assert result.output == "[run cancelled]"
    assert result.rounds[0].results[0].error.startswith("cancelled while running after ")
    assert_history_valid(agent.conversation)
    second = await agent.run("second")
    assert second.output == "second ok"
    assert_history_valid(agent.conversation)


async def test_breaking_out_of_stream_cancels_the_run():
    agent = Agent(ScriptedModel(lambda r: "word " * 100, chunk_size=5, delay=0.01))
    deltas = 0
    async for event in agent.stream("talk"):
        if isinstance(event, TextDelta):
            deltas += 1
            if deltas == 3:
                break
    await asyncio.sleep(0.05)
    assert agent.last_result is not None
    assert agent.last_result.stop_reason == "cancelled"
    assert agent.last_result.output.startswith("word word")
    assert_history_valid(agent.conversation)


def test_token_budget_stops_before_the_request_that_would_exceed_it():
    model = ScriptedModel(lambda r: reply(calls=[call("sales_by_region", region="t")]))
    agent = Agent(model, tools=[sales_by_region], max_total_tokens=900)
    result = agent.run_sync("spend")
    assert result.stop_reason == "token_budget"
    # At the budget one final request (no tools) asked for an answer from what was gathered.
    assert model.requests[-1].tool_choice == "none"
    assert result.output.startswith("Stopped after")
    assert result.usage.total_tokens <= 900
    assert 1 <= len(result.rounds) < 10
    assert_history_valid(agent.conversation)


def test_events_and_status_lines_follow_the_run():
    @tool
    def weather_lookup(city: str) -> str:
        """Weather of a city."""
        return f"sunny in {city}"

    def script(request):
        if not request.tool_results:
            return reply("Let me check.", [call("weather_lookup", city="Oslo")])
        return reply("It is sunny.")

    agent = Agent(ScriptedModel(script, chunk_size=4), tools=[weather_lookup])
    events = list(agent.stream_sync("Weather in Oslo?"))
    kinds = [type(e).__name__ for e in events]
    assert kinds[0] == "RunStarted" and kinds[-1] == "RunFinished"
    statuses = [e.text for e in events if isinstance(e, Status)]
    assert statuses == [
        "Analyzing request…",
        "Formulating response…",
        "Using Weather Lookup (Oslo)…",
        "Processing tool results…",
        "Formulating response…",
    ]
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    rounds = [e for e in events if isinstance(e, RoundFinished)]
    assert started[0].call.arguments == {"city": "Oslo"}
    assert finished[0].result.content == "sunny in Oslo"
    assert rounds[0].round.results[0] is finished[0].result
    text0 = "".join(e.text for e in events if isinstance(e, TextDelta) and e.round_index == 0)
    text1 = "".join(e.text for e in events if isinstance(e, TextDelta) and e.round_index == 1)
    assert (text0, text1) == ("Let me check.", "It is sunny.")
    assert (
        kinds.index("ToolCallStarted")
        < kinds.index("ToolCallFinished")
        < kinds.index("RoundFinished")
    )
    run_started = events[0]
    assert isinstance(run_started, RunStarted) and run_started.prompt == "Weather in Oslo?"
    final = events[-1]
    assert isinstance(final, RunFinished) and final.result.output == "It is sunny."


def test_early_stop_reports_status():
    agent = Agent(
        ScriptedModel(lambda r: reply(calls=[call("explode", what="q")])), tools=[explode]
    )
    statuses = [e.text for e in agent.stream_sync("x") if isinstance(e, Status)]
    assert statuses[-1] == "Stopped: tool errors"


def test_second_run_continues_the_conversation_and_reset_starts_over():
    model = ScriptedModel(lambda r: f"{len(r.messages)} messages so far")
    agent = Agent(model, system="Be brief.")
    assert agent.run_sync("one").output == "2 messages so far"
    assert agent.run_sync("two").output == "4 messages so far"
    assert model.requests[-1].request.system == "Be brief."
    agent.reset()
    assert agent.run_sync("three").output == "2 messages so far"
    assert agent.conversation.system == "Be brief."


def test_registry_tools_are_used_when_none_given():
    def script(request):
        if not request.tool_results:
            return reply(calls=[call("defined_later", x=2)])
        return reply(request.tool_results[0].content)

    agent = Agent(ScriptedModel(script))  # tools=None: the kernel-wide registry, looked up per run

    @tool
    def defined_later(x: int) -> int:
        """Doubles."""
        return 2 * x

    assert agent.run_sync("go").output == "4"


def test_run_sync_inside_a_running_event_loop():
    agent = Agent(ScriptedModel(lambda r: "from inside"))

    async def cell():  # what a notebook cell does: sync call while the kernel's loop runs
        asyncio.get_running_loop()
        return agent.run_sync("hi")

    result = asyncio.run(cell())
    assert result.output == "from inside"
    assert result.stop_reason == "complete"


def test_run_sync_from_worker_threads_concurrently():
    outputs: list[str] = []

    def worker(i: int) -> None:
        agent = Agent(ScriptedModel(lambda r: f"answer {r.prompt}"))
        outputs.append(agent.run_sync(str(i)).output)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(outputs) == [f"answer {i}" for i in range(4)]


def test_repeated_or_missing_call_ids_are_made_unique():
    from nbagent.messages import ToolCall

    def script(request):
        if request.round_index < 2:  # a server numbering every call "call_0", or none
            return reply(
                calls=[
                    ToolCall("call_0", "sales_by_region", {"region": "a"}),
                    ToolCall("", "sales_by_region", {"region": "b"}),
                ]
            )
        return reply("ok")

    agent = Agent(ScriptedModel(script), tools=[sales_by_region])
    result = agent.run_sync("go")
    ids = [c.id for rnd in result.rounds for c in rnd.calls]
    assert len(set(ids)) == 4 and all(ids)
    assert ids[0] == "call_0"
    assert_history_valid(agent.conversation)


def test_non_streaming_mode_delivers_the_same_answer_in_one_piece():
    agent = Agent(ScriptedModel(lambda r: "a fairly long answer text", chunk_size=3), stream=False)
    events = list(agent.stream_sync("hi"))
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert deltas == ["a fairly long answer text"]
    assert agent.last_result is not None
    assert agent.last_result.output == "a fairly long answer text"
