"""Issue 14's loop behaviours where the wire does not matter (ScriptedModel).

Fair error counting, status lines, progress from generator tools and
``nbagent.progress``, tool retries, tool middleware (cache, rate_limit),
``max_tool_only_rounds`` and ``NBAGENT_STRICT``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

import nbagent
from nbagent import Agent, Status, ToolError
from nbagent.events import ToolCallFinished, ToolProgress
from nbagent.messages import ToolCall
from nbagent.render import Transcript
from nbagent.testing import ScriptedModel, call, reply
from nbagent.tools import Tool, cache, rate_limit

from .helpers import assert_history_valid


def statuses(events: list[Any]) -> list[str]:
    return [e.text for e in events if isinstance(e, Status)]


# --------------------------------------------------------------------------- errors


def failing(what: str) -> str:
    """Always fails."""
    raise ValueError(f"cannot handle {what}")


def working(what: str) -> str:
    """Always works."""
    return f"handled {what}"


def test_parallel_failures_count_as_one_round_and_the_model_sees_them() -> None:
    def script(request: Any) -> Any:
        if request.round_index == 0:  # three failing calls at once
            return reply(calls=[call("failing", what=f"x{i}") for i in range(3)])
        if request.round_index == 1:
            return reply(calls=[call("working", what="y")])
        return reply("Done despite the errors.")

    model = ScriptedModel(script)
    agent = Agent(model, tools=[failing, working], store=None)
    events = list(agent.stream_sync("go"))
    result = agent.last_result
    assert result is not None
    assert result.stop_reason == "complete"
    assert result.output == "Done despite the errors."
    seen = model.requests[1].tool_results
    assert [r.ok for r in seen] == [False, False, False]  # the model saw all three errors
    assert "Tool Failing failed, trying again…" in statuses(events)


def test_consecutive_failed_rounds_stop_after_the_model_saw_the_last_errors() -> None:
    def script(request: Any) -> Any:
        if request.tool_choice == "none":
            return reply("The tool is broken: cannot handle x1.")
        return reply(calls=[call("failing", what=f"x{request.round_index}")])

    model = ScriptedModel(script)
    agent = Agent(model, tools=[failing], max_consecutive_errors=2, store=None)
    result = agent.run_sync("go")
    assert result.stop_reason == "tool_errors"
    assert len(result.rounds) == 2
    final = model.requests[-1]
    assert final.tool_choice == "none"
    assert [r.content for r in final.tool_results][-1] == "Error: ValueError: cannot handle x1"
    assert result.output == "The tool is broken: cannot handle x1."
    assert_history_valid(agent.conversation)


def test_a_success_resets_the_failed_round_count() -> None:
    plan = iter(["failing", "working", "failing", "working", "failing"])

    def script(request: Any) -> Any:
        name = next(plan, None)
        return reply(calls=[call(name, what="z")]) if name else reply("ok")

    agent = Agent(ScriptedModel(script), tools=[failing, working], max_consecutive_errors=2,
                  store=None)  # fmt: skip
    result = agent.run_sync("go")
    assert result.stop_reason == "complete" and len(result.rounds) == 5


def test_strict_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NBAGENT_STRICT", "1")
    agent = Agent(ScriptedModel([reply(calls=[call("failing", what="q")])]), tools=[failing],
                  store=None)  # fmt: skip
    with pytest.raises(ToolError, match="cannot handle q"):
        agent.run_sync("go")
    assert_history_valid(agent.conversation)


# --------------------------------------------------------------------------- status lines


def get_weather(city: str) -> str:
    """Weather of a city."""
    return f"sunny in {city}"


def test_forced_final_answer_is_logged_and_announced(caplog: pytest.LogCaptureFixture) -> None:
    model = ScriptedModel(lambda r: reply(calls=[call("get_weather", city="Oslo")])
                          if r.tool_choice == "auto" else reply("Sunny."))  # fmt: skip
    agent = Agent(model, tools=[get_weather], max_rounds=1, store=None)
    with caplog.at_level(logging.WARNING, logger="nbagent"):
        events = list(agent.stream_sync("Weather?"))
    lines = statuses(events)
    assert "Using Get Weather (Oslo)…" in lines
    assert "Maximum tool rounds reached. Generating final response…" in lines
    assert any("Maximum tool rounds reached" in r.getMessage() and r.levelno == logging.WARNING
               for r in caplog.records)  # fmt: skip


def test_status_model_writes_the_line_and_falls_back_when_silent() -> None:
    release = threading.Event()

    def slow_weather(city: str) -> str:
        """Weather, once the status line was shown."""
        release.wait(10)
        return f"sunny in {city}"

    def status_script(request: Any) -> str:
        assert "Slow Weather" in request.prompt and "Oslo" in request.prompt
        return "Checking the sky over Oslo."

    status_model = ScriptedModel(status_script)
    model = ScriptedModel([reply(calls=[call("slow_weather", city="Oslo")]), reply("Sunny.")])
    agent = Agent(model, tools=[slow_weather], status_model=status_model, store=None)
    seen: list[str] = []
    for event in agent.stream_sync("Weather?"):
        if isinstance(event, Status):
            seen.append(event.text)
            if event.text == "Checking the sky over Oslo…":
                release.set()
    release.set()
    assert seen.index("Using Slow Weather (Oslo)…") < seen.index("Checking the sky over Oslo…")

    async def never(request: Any) -> str:
        await asyncio.Event().wait()  # a status model that never answers
        return ""

    agent = Agent(ScriptedModel([reply(calls=[call("get_weather", city="Rome")]), reply("Hot.")]),
                  tools=[get_weather], status_model=ScriptedModel(never), store=None)  # fmt: skip
    lines = statuses(list(agent.stream_sync("Weather?")))
    assert "Using Get Weather (Rome)…" in lines and agent.last_result.output == "Hot."  # type: ignore[union-attr]


def test_max_tool_only_rounds_forces_the_answer() -> None:
    model = ScriptedModel(lambda r: reply(calls=[call("get_weather", city="Oslo")])
                          if r.tool_choice == "auto" else reply("Sunny."))  # fmt: skip
    agent = Agent(model, tools=[get_weather], max_tool_only_rounds=2, store=None)
    result = agent.run_sync("Weather?")
    assert len(result.rounds) == 2
    assert result.stop_reason == "tool_only_rounds"
    assert result.output == "Sunny."
    # Off by default: the same script runs to max_rounds.
    agent = Agent(ScriptedModel(model.script), tools=[get_weather], max_rounds=4, store=None)
    assert len(agent.run_sync("Weather?").rounds) == 4


# --------------------------------------------------------------------------- progress


def count_up(steps: int) -> Iterator[str]:
    """Counts, reporting each step."""
    for i in range(1, steps + 1):
        yield f"step {i} of {steps}"
    return f"counted to {steps}"  # noqa: B901 - a generator tool's return value is the result


async def count_async(steps: int) -> AsyncIterator[str]:
    """Counts asynchronously; the last value yielded is the result."""
    for i in range(1, steps + 1):
        await asyncio.sleep(0)
        yield f"async step {i}"


def plain_progress(n: int) -> str:
    """An ordinary function reporting progress."""
    nbagent.progress("half way", fraction=0.5)
    return f"done {n}"


@pytest.mark.parametrize(
    ("tool_name", "arguments", "lines", "model_sees"),
    [
        ("count_up", {"steps": 3}, ["step 1 of 3", "step 2 of 3", "step 3 of 3"], "counted to 3"),
        ("count_async", {"steps": 2}, ["async step 1", "async step 2"], "async step 2"),
        ("plain_progress", {"n": 7}, ["half way"], "done 7"),
    ],
)
def test_progress_lines_reach_the_live_panel_and_the_model_gets_the_value(
    tool_name: str, arguments: dict[str, Any], lines: list[str], model_sees: str
) -> None:
    model = ScriptedModel([reply(calls=[call(tool_name, **arguments)]), reply("ok")])
    agent = Agent(model, tools=[count_up, count_async, plain_progress], store=None)
    transcript = Transcript()
    panel_html: list[str] = []
    progress: list[ToolProgress] = []
    for event in agent.stream_sync("count"):
        transcript.feed(event)
        if isinstance(event, ToolProgress):
            progress.append(event)
            panel_html.append(transcript.html())
    assert [p.text for p in progress] == lines
    assert model.requests[1].tool_results[0].content == model_sees
    assert "generator object" not in model.requests[1].tool_results[0].content
    for line, html in zip(lines, panel_html, strict=True):
        assert 'class="nba-progress"' in html
        assert f"{tool_name}: {line}" in html
    if tool_name == "plain_progress":
        assert progress[0].fraction == 0.5 and "half way (50%)" in panel_html[0]


def test_progress_outside_a_tool_does_nothing() -> None:
    nbagent.progress("nobody listens")


# --------------------------------------------------------------------------- retries


def test_retries_with_backoff_then_success_and_attempts_shown() -> None:
    attempts: list[int] = []

    def flaky(city: str) -> str:
        """Fails twice."""
        attempts.append(1)
        if len(attempts) < 3:
            raise ConnectionError("connection reset")
        return f"sunny in {city}"

    flaky_tool = Tool(flaky, retries=3, retry_backoff=0.001)
    model = ScriptedModel([reply(calls=[call("flaky", city="Oslo")]), reply("Sunny.")])
    agent = Agent(model, tools=[flaky_tool], store=None)
    events = list(agent.stream_sync("Weather?"))
    assert len(attempts) == 3
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished[0].result.ok and finished[0].result.content == "sunny in Oslo"
    lines = [e.text for e in events if isinstance(e, ToolProgress)]
    assert len(lines) == 2
    assert lines[0].startswith("attempt 1 of 4 failed (ConnectionError: connection reset)")


def test_no_retry_by_default_nor_for_other_errors() -> None:
    attempts: list[int] = []

    def broken(city: str) -> str:
        """Always fails."""
        attempts.append(1)
        raise ConnectionError("down")

    agent = Agent(ScriptedModel([reply(calls=[call("broken", city="x")]), reply("no")]),
                  tools=[broken], store=None)  # fmt: skip
    agent.run_sync("go")
    assert len(attempts) == 1

    attempts.clear()
    value_error = Tool(failing, retries=3, retry_backoff=0.001)
    agent = Agent(ScriptedModel([reply(calls=[call("failing", what="x")]), reply("no")]),
                  tools=[value_error], store=None)  # fmt: skip
    result = agent.run_sync("go")
    assert not result.rounds[0].results[0].ok  # ValueError is not in retry_on


# --------------------------------------------------------------------------- middleware


def test_middleware_sees_arguments_and_results() -> None:
    audit: list[tuple[str, dict[str, Any], Any]] = []

    def auditing(call: ToolCall, arguments: dict[str, Any], proceed: Any) -> Any:
        result = proceed({**arguments, "city": arguments["city"].upper()})
        audit.append((call.name, arguments, result))
        return result + "!"

    model = ScriptedModel([reply(calls=[call("get_weather", city="oslo")]), reply("ok")])
    agent = Agent(model, tools=[get_weather], tool_middleware=[auditing], store=None)
    agent.run_sync("go")
    assert audit == [("get_weather", {"city": "oslo"}, "sunny in OSLO")]
    assert model.requests[1].tool_results[0].content == "sunny in OSLO!"


def test_cache_serves_repeated_calls_sync_and_async() -> None:
    runs: list[str] = []

    def lookup(key: str) -> str:
        """Looks up a key."""
        runs.append(key)
        return f"value of {key}"

    async def alookup(key: str) -> str:
        """Looks up a key, async."""
        runs.append("async " + key)
        return f"async value of {key}"

    calls = [reply(calls=[call("lookup", key="a"), call("alookup", key="a")]) for _ in range(3)]
    model = ScriptedModel([*calls, reply("done")])
    agent = Agent(model, tools=[lookup, alookup], tool_middleware=[cache(ttl=60)], store=None)
    result = agent.run_sync("go")
    assert sorted(runs) == ["a", "async a"]  # once each; the next two rounds came from the cache
    assert [r.content for rnd in result.rounds for r in rnd.results] == [
        "value of a", "async value of a"] * 3  # fmt: skip


def test_rate_limit_makes_calls_wait_for_their_slot() -> None:
    model = ScriptedModel([reply(calls=[call("get_weather", city=c) for c in "ABC"]), reply("ok")])
    agent = Agent(model, tools=[get_weather], tool_middleware=[rate_limit(2, 0.05)], store=None)
    events = list(agent.stream_sync("go"))
    waits = [e for e in events if isinstance(e, ToolProgress) and "rate limit" in e.text]
    assert len(waits) == 1  # the third call waited for a slot
    assert all(r.ok for r in agent.last_result.rounds[0].results)  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        rate_limit(0, 1)
