"""Tool calls as the model experiences them: validation, repair, errors, concurrency,
timeouts, output budgets and approval."""

from __future__ import annotations

import asyncio
import threading
import time

import pandas as pd

from nbagent import Agent, tool
from nbagent.testing import ScriptedModel, call, raw_call, reply
from nbagent.tools.approval import policy_approver

from .helpers import assert_history_valid


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def run_calls(calls_per_round, tools, **agent_options):
    """Run an agent whose model sends the given calls round by round, then answers.

    Returns the result and, per round, the tool results the model then received.
    """
    rounds = list(calls_per_round)

    def script(request):
        n = request.round_index
        if n < len(rounds):
            return reply(calls=rounds[n])
        return reply("done")

    model = ScriptedModel(script)
    agent = Agent(model, tools=tools, **agent_options)
    result = agent.run_sync("go")
    seen = [r.messages[-1].rounds[-1].results for r in model.requests[1:]]
    assert_history_valid(agent.conversation)
    return result, seen, model


def test_unknown_tool_gets_an_error_listing_available_tools():
    @tool
    def multiply(a: int, b: int) -> int:
        """Multiply."""
        return a * b

    result, seen, _ = run_calls([[call("subtract", a=1, b=2)]], [add, multiply])
    err = seen[0][0]
    assert not err.ok
    assert err.content == "Error: Unknown tool 'subtract'. Available tools: add, multiply."
    assert result.stop_reason == "complete"


def test_invalid_arguments_then_the_model_corrects_itself():
    def script(request):
        results = request.tool_results
        if not results:
            return reply(calls=[call("add", a="two", b=3)])
        if not results[-1].ok:
            assert "argument 'a'" in results[-1].content
            return reply(calls=[call("add", a=2, b=3)])
        return reply(f"The sum is {results[-1].content}.")

    model = ScriptedModel(script)
    agent = Agent(model, tools=[add])
    result = agent.run_sync("2+3?")
    error = model.requests[1].tool_results[0].content
    assert error == (
        "Error: Invalid arguments for add: argument 'a': Input should be a valid integer, "
        'unable to parse string as an integer (got "two"). '
        "Expected arguments: a (int, required), b (int, required)."
    )
    assert result.output == "The sum is 5."
    assert [r.results[0].ok for r in result.rounds] == [False, True]
    assert result.tool_results == [5]


def test_missing_and_unexpected_arguments_are_named():
    _, seen, _ = run_calls([[call("add", a=1, c=2)]], [add])
    content = seen[0][0].content
    assert "missing required argument 'b'" in content
    assert "unexpected argument 'c'" in content


def test_malformed_json_is_repaired_once():
    damaged = [
        '```json\n{"a": 2, "b": 3}\n```',  # code fence
        '{"a": 2, "b": 3,}',  # trailing comma
        "{'a': 2, 'b': 3}",  # single quotes
        '{"a": "2", "b": "3"}',  # numbers as strings
    ]
    _, seen, _ = run_calls([[raw_call("add", text)] for text in damaged], [add])
    assert [s[-1].content for s in seen] == ["5", "5", "5", "5"]
    assert all(s[-1].ok for s in seen)


def test_booleans_lists_and_nulls_sent_as_strings_are_repaired():
    @tool
    def configure(verbose: bool, ids: list[int], limit: int | None = 5) -> str:
        """Configure."""
        return f"{verbose}|{ids}|{limit}"

    _, seen, _ = run_calls(
        [[call("configure", verbose="true", ids="[1, 2]", limit="null")]], [configure]
    )
    assert seen[0][0].content == "True|[1, 2]|None"


def test_unrepairable_json_reports_why():
    _, seen, _ = run_calls([[raw_call("add", '{"a": 2, "b": ')]], [add])
    content = seen[0][0].content
    assert content.startswith("Error: Invalid arguments for add: the arguments are not valid JSON")
    assert "Expecting value" in content


def test_non_object_arguments_are_rejected():
    _, seen, _ = run_calls([[raw_call("add", "[2, 3]")]], [add])
    assert "must be a JSON object" in seen[0][0].content


def test_four_one_second_tools_run_concurrently_in_call_order():
    @tool
    def sleepy(n: int) -> str:
        """Sleeps one second."""
        time.sleep(1.0)
        return f"done {n}"

    calls = [call("sleepy", n=i) for i in range(4)]
    started = time.perf_counter()
    result, seen, _ = run_calls([calls], [sleepy])
    elapsed = time.perf_counter() - started
    assert elapsed < 1.9, elapsed  # serial would take 4 s
    assert [r.content for r in seen[0]] == ["done 0", "done 1", "done 2", "done 3"]
    assert [r.call_id for r in seen[0]] == [c.id for c in calls]
    assert all(0.9 < r.duration_s < 1.9 for r in result.rounds[0].results)


def test_async_tools_run_as_concurrent_tasks_and_keep_order():
    @tool
    async def wait(seconds: float) -> float:
        """Waits."""
        await asyncio.sleep(seconds)
        return seconds

    calls = [call("wait", seconds=s) for s in (0.6, 0.1, 0.3)]
    started = time.perf_counter()
    result, seen, _ = run_calls([calls], [wait])
    assert time.perf_counter() - started < 1.2
    assert [r.content for r in seen[0]] == ["0.6", "0.1", "0.3"]
    assert result.tool_results == [0.6, 0.1, 0.3]


def test_sequential_tools_never_overlap():
    intervals: list[tuple[float, float]] = []
    lock = threading.Lock()

    @tool(sequential=True)
    def write_file(name: str) -> str:
        """Not safe to run twice at once."""
        start = time.perf_counter()
        time.sleep(0.2)
        with lock:
            intervals.append((start, time.perf_counter()))
        return name

    @tool
    def read_only(n: int) -> int:
        """Safe to run concurrently."""
        time.sleep(0.2)
        return n

    calls = [call("write_file", name=f"f{i}") for i in range(3)] + [call("read_only", n=1)]
    result, seen, _ = run_calls([calls], [write_file, read_only])
    assert [r.content for r in seen[0]] == ["f0", "f1", "f2", "1"]
    intervals.sort()
    for (_, end), (start, _) in zip(intervals, intervals[1:], strict=False):
        assert start >= end, intervals
    # Each call's duration is its own run time, not its wait for the others.
    assert all(r.duration_s < 0.35 for r in result.rounds[0].results)


def test_hung_tool_times_out_and_the_run_goes_on():
    release = threading.Event()

    @tool(timeout=0.5)
    def hang() -> str:
        """Never returns in time."""
        release.wait(30)
        return "late"

    started = time.perf_counter()
    result, seen, _ = run_calls(
        [[call("hang"), call("add", a=1, b=1)], [call("add", a=2, b=2)]], [hang, add]
    )
    elapsed = time.perf_counter() - started
    release.set()
    assert elapsed < 2.5, elapsed  # not blocked by the stuck thread
    assert seen[0][0].content == "Error: hang timed out after 0.5 s"
    assert seen[0][1].content == "2"
    assert seen[1][0].content == "4"  # the next round ran normally
    assert result.stop_reason == "complete" and result.output == "done"


def test_agent_tool_timeout_applies_to_tools_without_their_own():
    @tool
    async def slow_async() -> str:
        """Sleeps."""
        await asyncio.sleep(10)
        return "x"

    _, seen, _ = run_calls([[call("slow_async")]], [slow_async], tool_timeout=0.2)
    assert seen[0][0].content == "Error: slow_async timed out after 0.2 s"


def test_dataframe_and_series_results_are_compact():
    frame = pd.DataFrame({"a": range(100_000), "b": [1.5] * 100_000}, index=None)

    @tool
    def big() -> pd.DataFrame:
        """A big frame."""
        return frame

    @tool
    def column() -> pd.Series:
        """A column."""
        return frame["a"]

    result, seen, _ = run_calls([[call("big"), call("column")]], [big, column])
    table, series = seen[0][0].content, seen[0][1].content
    assert table.splitlines()[:4] == [
        "DataFrame shape=(100000, 2); dtypes: a: int64, b: float64",
        "(first 10 of 100000 rows)",
        "a,b",
        "0,1.5",
    ]
    assert len(table.splitlines()) == 13
    assert series.splitlines()[:3] == [
        "Series shape=(100000, 1); dtypes: a: int64",
        "(first 10 of 100000 rows)",
        "a",
    ]
    assert result.rounds[0].results[0].truncated
    assert result.tool_results[0] is frame  # the very object, not a copy


def test_long_text_keeps_head_and_tail_with_a_cut_marker():
    text = "HEAD" + "x" * 10_000 + "TAIL"

    @tool
    def long() -> str:
        """Long text."""
        return text

    result, seen, _ = run_calls([[call("long")]], [long])
    content = seen[0][0].content
    assert content.startswith("HEADxxx") and content.endswith("xxxTAIL")
    assert len(content) <= 4000
    cut = len(text) - len(content.split("\n")[0]) - len(content.split("\n")[-1])
    assert f"\n[… {cut} characters cut …]\n" in content
    assert result.rounds[0].results[0].truncated
    assert result.tool_results == [text]


def test_round_budget_is_shared_later_calls_get_what_is_left():
    @tool
    def chunk(n: int) -> str:
        """A 5000-character chunk."""
        return str(n) * 5000

    calls = [call("chunk", n=i) for i in range(6)]
    _, seen, _ = run_calls([calls], [chunk])
    sizes = [len(r.content) for r in seen[0]]
    assert sizes[:4] == [sizes[0]] * 4 and 3900 < sizes[0] <= 4000  # per-call limit
    assert sum(sizes[:4]) <= 16_000
    assert 150 <= sizes[4] <= 200  # what was left (a floor keeps it readable)
    assert sizes[5] == sizes[4]
    assert all("characters cut" in r.content for r in seen[0])


def test_per_tool_and_per_run_output_limits():
    @tool(max_output_chars=500)
    def tiny() -> str:
        """Capped."""
        return "y" * 2000

    @tool
    def normal() -> str:
        """Uses the agent's limit."""
        return "z" * 2000

    from nbagent.run.settings import RunInputs, RunSettings
    from nbagent.run.steps import execute_calls

    # The per-call budget is nbagent's own input to a run (not a user keyword).
    results = asyncio.run(
        execute_calls(
            [call("tiny"), call("normal")],
            {"tiny": tiny, "normal": normal},
            RunSettings(),
            inputs=RunInputs(per_call_chars=1000),
        )
    )
    assert len(results[0].content) <= 500
    assert 900 < len(results[1].content) <= 1000


def test_other_values_become_json():
    import dataclasses

    @dataclasses.dataclass
    class Point:
        x: int
        y: int

    @tool
    def values() -> dict:
        """Mixed values."""
        return {"point": Point(1, 2), "when": pd.Timestamp("2024-01-02"), "set": {3}}

    @tool
    def many() -> list:
        """A long list."""
        return list(range(100_000))

    @tool
    def nothing() -> None:
        """Returns None."""

    _, seen, _ = run_calls(
        [[call("values"), call("many"), call("nothing")]], [values, many, nothing]
    )
    assert seen[0][0].content == (
        '{"point": {"x": 1, "y": 2}, "when": "2024-01-02 00:00:00", "set": [3]}'
    )
    assert seen[0][1].content.startswith("[0, 1, 2, 3")
    assert "… 99800 more items" in seen[0][1].content
    assert seen[0][2].content == "null"


def test_approval_policy_deny_by_default(monkeypatch):
    monkeypatch.delenv("NBAGENT_APPROVAL", raising=False)
    ran = []

    @tool(requires_approval=True)
    def delete_rows(table: str) -> str:
        """Deletes rows."""
        ran.append(table)
        return "deleted"

    result, seen, _ = run_calls([[call("delete_rows", table="t")]], [delete_rows])
    assert ran == []
    assert seen[0][0].content == (
        "Error: The user denied this call to delete_rows (denied by policy NBAGENT_APPROVAL=deny)."
    )
    assert result.rounds[0].results[0].approval == "denied by policy NBAGENT_APPROVAL=deny"


def test_approval_policy_allow_list(monkeypatch):
    @tool(requires_approval=True)
    def safe_op() -> str:
        """Allowed."""
        return "safe done"

    @tool(requires_approval=True)
    def risky_op() -> str:
        """Not allowed."""
        return "risky done"

    monkeypatch.setenv("NBAGENT_APPROVAL", "allow:safe_op, other")
    _, seen, _ = run_calls([[call("safe_op"), call("risky_op")]], [safe_op, risky_op])
    assert seen[0][0].content == "safe done"
    assert seen[0][1].content.startswith("Error: The user denied this call to risky_op")

    monkeypatch.setenv("NBAGENT_APPROVAL", "allow")
    _, seen, _ = run_calls([[call("risky_op")]], [risky_op])
    assert seen[0][0].content == "risky done"


def test_custom_approver_decides():
    asked = []

    async def approver(c, t):
        asked.append((c.name, c.arguments))
        return c.arguments["n"] > 0, "test approver"

    @tool(requires_approval=True)
    def guarded(n: int) -> int:
        """Guarded."""
        return n

    result, seen, _ = run_calls(
        [[call("guarded", n=1), call("guarded", n=-1)]], [guarded], approver=approver
    )
    assert asked == [("guarded", {"n": 1}), ("guarded", {"n": -1})]
    assert seen[0][0].content == "1"
    assert "denied by test approver" in seen[0][1].content
    assert policy_approver({"NBAGENT_APPROVAL": "allow:x"})(call("x"), guarded) == (
        True,
        "policy NBAGENT_APPROVAL=allow:x",
    )


def test_a_failing_approver_denies_instead_of_crashing():
    def approver(c, t):
        raise RuntimeError("approval UI gone")

    @tool(requires_approval=True)
    def guarded2() -> str:
        """Guarded."""
        return "ran"

    result, seen, _ = run_calls([[call("guarded2")]], [guarded2], approver=approver)
    assert seen[0][0].content == (
        "Error: The user denied this call to guarded2 "
        "(denied by a failing approver (RuntimeError: approval UI gone))."
    )
    assert result.stop_reason == "complete"


def test_sync_wrapper_returning_a_coroutine_is_awaited():
    async def fetch(n: int) -> int:
        await asyncio.sleep(0)
        return n * 10

    @tool
    def wrapper(n: int):
        """Returns a coroutine."""
        return fetch(n)

    _, seen, _ = run_calls([[call("wrapper", n=4)]], [wrapper])
    assert seen[0][0].content == "40"


def test_sequential_tools_never_overlap_even_after_a_timeout():
    intervals: list[tuple[str, float, float]] = []
    lock = threading.Lock()

    @tool(sequential=True, timeout=0.3)
    def migrate(step: str, seconds: float) -> str:
        """Must run alone."""
        start = time.perf_counter()
        time.sleep(seconds)
        with lock:
            intervals.append((step, start, time.perf_counter()))
        return step

    # Round 1: "slow" times out but its thread keeps running for 0.8 s.
    # Round 2: "next" must not start before "slow" really ended.
    rounds = [
        [call("migrate", step="slow", seconds=0.8)],
        [call("migrate", step="next", seconds=0)],
    ]
    _, seen, _ = run_calls(rounds, [migrate], tool_timeout=5)
    assert seen[0][0].content == "Error: migrate timed out after 0.3 s"
    deadline = time.perf_counter() + 3
    while len(intervals) < 2 and time.perf_counter() < deadline:
        time.sleep(0.05)
    by_step = {step: (start, end) for step, start, end in intervals}
    if seen[1][0].ok:  # it got its turn within its timeout: strictly after "slow"
        assert by_step["next"][0] >= by_step["slow"][1]
    else:  # or it waited its whole timeout for the stuck call, and never overlapped
        assert seen[1][0].content == "Error: migrate timed out after 0.3 s"
        assert by_step["next"][0] >= by_step["slow"][1]
