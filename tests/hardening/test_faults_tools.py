"""Hostile tools and values: nothing they raise or block on stops a run, its deadline, the next run.

Each scenario runs in a real child process with a hard deadline (a hang fails the
test: the child is SIGKILLed). Each asserts: the run ends in time with a clear
outcome, the next run works, the history is valid.
"""

from __future__ import annotations

import pytest

from tests.hardening.faults import run_child

# An async tool (or a returned value) raising each BaseException nbagent must survive.
RAISERS = {
    "KeyboardInterrupt": "raise KeyboardInterrupt",
    "SystemExit": "sys.exit(3)",
    "GeneratorExit": "raise GeneratorExit",
    "custom BaseException": "raise Hostile('no')",
}


@pytest.mark.parametrize("kind", ["async tool", "sync tool", "repr of the value", "str of error"])
@pytest.mark.parametrize("name", list(RAISERS))
def test_a_base_exception_from_user_code_is_that_calls_error_and_the_next_run_works(
    tmp_path, kind, name
):
    statement = RAISERS[name]
    code = f"""
class Hostile(BaseException):
    pass

class Value:
    def __repr__(self):
        {statement}
    __str__ = __repr__

class Failing(Exception):
    def __str__(self):
        {statement}

@tool
async def async_tool() -> str:
    \"\"\"Raises.\"\"\"
    {statement}

@tool
def sync_tool() -> str:
    \"\"\"Raises.\"\"\"
    {statement}

@tool
def value_tool() -> object:
    \"\"\"Returns a hostile value.\"\"\"
    return Value()

@tool
def error_tool() -> str:
    \"\"\"Raises an exception whose message raises.\"\"\"
    raise Failing()

which = {{"async tool": "async_tool", "sync tool": "sync_tool",
         "repr of the value": "value_tool", "str of error": "error_tool"}}[{kind!r}]
agent = Agent(ScriptedModel(first_call((which, {{}}))),
              tools=[async_tool, sync_tool, value_tool, error_tool], timeout=20)
first = agent.run_sync("go")
second = agent.run_sync("again")
assert_history_valid(agent.conversation)
done(first=first.output, stop=first.stop_reason, second=second.output,
     loops=[t.name for t in threading.enumerate()].count("nbagent-event-loop"))
"""
    facts = run_child(code, tmp_path, deadline=40)
    assert facts["stop"] == "complete", facts
    assert facts["loops"] == 1
    assert facts["second"] == "again"  # the same loop thread still serves runs
    if kind == "repr of the value":
        assert facts["first"].startswith("<Value: unprintable ("), facts
    elif kind == "str of error":
        assert facts["first"].startswith("Error: Failing"), facts
    else:
        assert facts["first"].startswith(f"Error: {name.split()[-1].replace('custom ', '')}") or (
            name == "custom BaseException" and facts["first"].startswith("Error: Hostile: no")
        ), facts


def test_a_value_whose_repr_hangs_becomes_a_placeholder_within_the_bound(tmp_path):
    code = """
class Slow:
    def __repr__(self):
        time.sleep(60)
        return "never"

@tool
def slow_value() -> object:
    \"\"\"Returns a value that takes a minute to print.\"\"\"
    return Slow()

agent = Agent(ScriptedModel(first_call(("slow_value", {}))), tools=[slow_value], timeout=30)
started = time.monotonic()
first = agent.run_sync("go")
took = time.monotonic() - started
second = agent.run_sync("again")
assert_history_valid(agent.conversation)
done(first=first.output, stop=first.stop_reason, took=took, second=second.output)
"""
    facts = run_child(code, tmp_path, deadline=45)
    assert facts["stop"] == "complete" and facts["second"] == "again"
    assert facts["first"] == "<Slow object: could not be formatted within 5 s>"
    assert facts["took"] < 25  # the bound, not the minute the repr takes


def test_an_async_tool_that_blocks_is_abandoned_at_its_timeout(tmp_path):
    code = """
@tool(timeout=1)
async def blocking() -> str:
    \"\"\"Blocks its event loop (the mistake this guards against).\"\"\"
    time.sleep(30)
    return "late"

@tool
async def fine() -> str:
    \"\"\"A well-behaved async tool.\"\"\"
    await asyncio.sleep(0)
    return "fine"

def script(request):
    if request.prompt == "go" and not request.tool_results:
        return reply(calls=[call("blocking")])
    if request.prompt == "again" and not request.tool_results:
        return reply(calls=[call("fine")])
    return " | ".join(r.content for r in request.tool_results)

agent = Agent(ScriptedModel(script), tools=[blocking, fine], timeout=20)
started = time.monotonic()
first = agent.run_sync("go")
took = time.monotonic() - started
second = agent.run_sync("again")
assert_history_valid(agent.conversation)
done(first=first.output, took=took, second=second.output, stop=first.stop_reason)
"""
    facts = run_child(code, tmp_path, deadline=45)
    assert facts["stop"] == "complete"
    assert facts["first"].startswith("Error: blocking timed out after 1 s and was abandoned")
    assert "blocked its event loop" in facts["first"]
    assert facts["took"] < 15  # not the 30 s it blocks
    assert facts["second"] == "fine"  # later async tools get a fresh worker loop


def test_an_async_tool_that_blocks_cannot_stop_the_run_deadline(tmp_path):
    code = """
@tool
async def blocking() -> str:
    \"\"\"Blocks its event loop.\"\"\"
    time.sleep(30)
    return "late"

agent = Agent(ScriptedModel(first_call(("blocking", {}))), tools=[blocking], timeout=2)
started = time.monotonic()
first = agent.run_sync("go")
took = time.monotonic() - started
error = first.rounds[0].results[0].error
agent.settings = agent.settings.replace(timeout=20)
second = agent.run_sync("again")
assert_history_valid(agent.conversation)
done(stop=first.stop_reason, took=took, error=error, second=second.output)
"""
    facts = run_child(code, tmp_path, deadline=45)
    assert facts["stop"] == "timeout" and facts["took"] < 15
    assert facts["error"].startswith("the run timed out while running after ")
    assert facts["second"] == "again"


def test_a_sync_approver_that_blocks_cannot_stop_the_run_deadline(tmp_path):
    code = """
@tool(requires_approval=True)
def delete() -> str:
    \"\"\"Needs approval.\"\"\"
    return "deleted"

def approver(call, t):
    time.sleep(30)
    return True

agent = Agent(ScriptedModel(first_call(("delete", {}))), tools=[delete], timeout=2,
              approver=approver)
started = time.monotonic()
first = agent.run_sync("go")
took = time.monotonic() - started
agent.settings = agent.settings.replace(approver=lambda call, t: (False, "test"))
agent.settings = agent.settings.replace(timeout=20)
second = agent.run_sync("again")
assert_history_valid(agent.conversation)
done(stop=first.stop_reason, took=took, second=second.output)
"""
    facts = run_child(code, tmp_path, deadline=45)
    assert facts["stop"] == "timeout" and facts["took"] < 15
    assert facts["second"] == "again"


@pytest.mark.parametrize(
    "raise_it, expected",
    [
        ("raise TimeoutError('upstream slow')", "Error: TimeoutError: upstream slow"),
        ("raise socket.timeout('timed out')", "Error: TimeoutError: timed out"),
        ("raise asyncio.TimeoutError()", "Error: TimeoutError: "),
        ("raise asyncio.CancelledError('mine')", "Error: CancelledError: mine"),
    ],
)
@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_a_tools_own_timeout_or_cancelled_error_is_reported_as_its_own(
    tmp_path, raise_it, expected, flavour
):
    code = f"""
@tool
def sync_tool() -> str:
    \"\"\"Fails fast with its own exception.\"\"\"
    {raise_it}

@tool
async def async_tool() -> str:
    \"\"\"Fails fast with its own exception.\"\"\"
    {raise_it}

agent = Agent(ScriptedModel(first_call(({flavour!r} + "_tool", {{}}))),
              tools=[sync_tool, async_tool], timeout=20)
first = agent.run_sync("go")
second = agent.run_sync("again")
assert_history_valid(agent.conversation)
done(first=first.output, stop=first.stop_reason, second=second.output)
"""
    facts = run_child(code, tmp_path, deadline=40)
    assert facts["stop"] == "complete" and facts["second"] == "again"
    assert facts["first"] == expected, facts  # not "timed out after 60 s", not "not run"


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_cancel_from_another_thread_is_immediate_and_says_the_call_was_running(tmp_path, flavour):
    code = f"""
started = threading.Event()

@tool
def sync_tool() -> str:
    \"\"\"Works for a long time.\"\"\"
    started.set()
    time.sleep(30)
    return "finished"

@tool
async def async_tool() -> str:
    \"\"\"Waits for a long time.\"\"\"
    started.set()
    await asyncio.sleep(30)
    return "finished"

agent = Agent(ScriptedModel(first_call(({flavour!r} + "_tool", {{}}))),
              tools=[sync_tool, async_tool], timeout=60)
took = []

def canceller():
    started.wait(20)
    time.sleep(0.2)
    asked = time.monotonic()
    agent.cancel()
    while agent.last_result is None or agent.last_result.stop_reason != "cancelled":
        time.sleep(0.01)
    took.append(time.monotonic() - asked)

watcher = threading.Thread(target=canceller, daemon=True)
watcher.start()
first = agent.run_sync("go")
watcher.join(20)
error = first.rounds[0].results[0].error
second = agent.run_sync("again")
assert_history_valid(agent.conversation)
done(stop=first.stop_reason, took=took[0] if took else None, error=error, second=second.output)
"""
    facts = run_child(code, tmp_path, deadline=50)
    assert facts["stop"] == "cancelled" and facts["second"] == "again"
    assert facts["took"] is not None and facts["took"] < 2  # at once, not when the loop next wakes
    assert facts["error"].startswith("cancelled while running after ")
    if flavour == "sync":
        assert facts["error"].endswith("a sync function may still finish in the background")


def test_a_dead_loop_thread_is_noticed_and_the_next_run_gets_a_fresh_loop(tmp_path):
    # An async approver runs on nbagent's loop (the live approval bridge must): a hostile
    # one stops that loop. The run waiting on it ends with a clear error, not a hang.
    code = """
@tool(requires_approval=True)
def delete() -> str:
    \"\"\"Needs approval.\"\"\"
    return "deleted"

async def approver(call, t):
    asyncio.get_running_loop().stop()
    await asyncio.sleep(3600)
    return True

agent = Agent(ScriptedModel(first_call(("delete", {}))), tools=[delete], timeout=20,
              approver=approver)
try:
    agent.run_sync("go")
    error = None
except Exception as exc:
    error = f"{type(exc).__name__}: {exc}"
agent.settings = agent.settings.replace(approver=lambda call, t: (True, "test"))
second = agent.run_sync("again")
done(error=error, second=second.output)
"""
    facts = run_child(code, tmp_path, deadline=45)
    assert facts["error"].startswith("NbAgentError: nbagent's event loop thread stopped")
    assert facts["second"] == "again"


def test_a_process_killed_mid_tool_leaves_history_the_next_process_resumes(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.hardening.faults import PRELUDE, ROOT
    from tests.support.env import child_environment

    env = child_environment(
        NBAGENT_HOME=str(tmp_path),
        PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    victim = (
        PRELUDE
        + """
@tool
def stuck() -> str:
    \"\"\"Never returns.\"\"\"
    print("STUCK", flush=True)
    time.sleep(3600)
    return "never"

agent = Agent(ScriptedModel(first_call(("stuck", {}))), tools=[stuck])
agent.run_sync("go")
"""
    )
    child = subprocess.Popen(
        [sys.executable, "-c", victim], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "STUCK"
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
    time.sleep(0.1)
    facts = run_child(
        """
agent = Agent.resume(None, model=ScriptedModel(lambda r: "resumed fine"))
result = agent.run_sync("after the kill")
assert_history_valid(agent.conversation)
done(output=result.output, roles=[m.role for m in agent.conversation.messages])
""",
        tmp_path,
        deadline=40,
    )
    assert facts["output"] == "resumed fine"
    assert facts["roles"][-2:] == ["user", "assistant"]


def test_an_async_tool_that_stops_its_event_loop_changes_nothing(tmp_path):
    code = """
@tool
async def stopper() -> str:
    \"\"\"Stops the loop it runs on, then returns.\"\"\"
    asyncio.get_running_loop().stop()
    await asyncio.sleep(0.01)
    return "stopped it"

agent = Agent(ScriptedModel(first_call(("stopper", {}))), tools=[stopper], timeout=20)
first = agent.run_sync("go")
second = agent.run_sync("again")
assert_history_valid(agent.conversation)
done(first=first.output, second=second.output)
"""
    facts = run_child(code, tmp_path, deadline=40)
    assert facts == {"first": "stopped it", "second": "again"}


def test_an_exception_whose_message_hangs_is_reported_within_the_bound(tmp_path):
    code = """
class Stuck(Exception):
    def __str__(self):
        time.sleep(60)
        return "never"

@tool
def failing() -> str:
    \"\"\"Raises an exception whose message takes a minute.\"\"\"
    raise Stuck()

agent = Agent(ScriptedModel(first_call(("failing", {}))), tools=[failing], timeout=30)
first = agent.run_sync("go")
second = agent.run_sync("again")
assert_history_valid(agent.conversation)
done(first=first.output, second=second.output)
"""
    facts = run_child(code, tmp_path, deadline=45)
    assert facts["first"] == "Error: Stuck: (its message could not be read in time)"
    assert facts["second"] == "again"


@pytest.mark.parametrize("statement", ["sys.exit(1)", "raise KeyboardInterrupt"])
def test_a_sync_approver_raising_a_base_exception_denies_the_call(tmp_path, statement):
    code = f"""
@tool(requires_approval=True)
def delete() -> str:
    \"\"\"Needs approval.\"\"\"
    return "deleted"

def approver(call, t):
    {statement}

agent = Agent(ScriptedModel(first_call(("delete", {{}}))), tools=[delete], timeout=20,
              approver=approver)
first = agent.run_sync("go")
approval = first.rounds[0].results[0].approval
second = agent.run_sync("again")
assert_history_valid(agent.conversation)
done(first=first.output, approval=approval, second=second.output)
"""
    facts = run_child(code, tmp_path, deadline=40)
    assert facts["first"].startswith("Error: The user denied this call to delete")
    assert facts["approval"].startswith("denied by a failing approver (")
    assert facts["second"] == "again"


def test_hostile_values_still_format_when_the_round_budget_is_tight(tmp_path):
    # Five 4,000-character results fill the 16,000-character round budget: the last
    # value is formatted again, smaller, and its repr raises SystemExit that time.
    code = """
class Value:
    def __init__(self):
        self.calls = 0
    def __repr__(self):
        self.calls += 1
        if self.calls > 1:
            raise SystemExit("second repr")
        return "v" * 5000

@tool
def big(n: int) -> object:
    \"\"\"Returns a large value.\"\"\"
    return Value()

calls = [("big", {"n": n}) for n in range(5)]
agent = Agent(ScriptedModel(first_call(*calls)), tools=[big], timeout=30)
first = agent.run_sync("go")
second = agent.run_sync("again")
assert_history_valid(agent.conversation)
done(last=first.rounds[0].results[-1].content, stop=first.stop_reason, second=second.output)
"""
    facts = run_child(code, tmp_path, deadline=40)
    assert facts["stop"] == "complete" and facts["second"] == "again"
    assert facts["last"] == "<Value: unprintable (SystemExit)>"
