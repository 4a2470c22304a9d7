"""The sync API: plain scripts, Ctrl-C / kernel interrupts, early exit, logging."""

from __future__ import annotations

import _thread
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from nbagent import Agent, TextDelta, tool
from nbagent.testing import ScriptedModel, call, reply

from .helpers import assert_history_valid

SCRIPT = textwrap.dedent(
    """
    import json, time
    from nbagent import Agent, tool
    from nbagent.testing import ScriptedModel, call, reply

    @tool
    def wait_long() -> str:
        \"\"\"Waits a long time.\"\"\"
        print("TOOL STARTED", flush=True)
        time.sleep(60)
        return "never seen"

    def script(request):
        if request.prompt == "first":
            return reply("Working.", [call("wait_long")])
        return reply("second run fine")

    agent = Agent(ScriptedModel(script), tools=[wait_long])
    started = time.perf_counter()
    try:
        agent.run_sync("first")
        outcome = "finished"
    except KeyboardInterrupt:
        outcome = "KeyboardInterrupt"
    elapsed = time.perf_counter() - started
    first = agent.last_result
    second = agent.run_sync("second")
    rounds = agent.conversation.messages[1].rounds
    print(json.dumps({
        "outcome": outcome,
        "elapsed": elapsed,
        "stop_reason": first.stop_reason,
        "output": first.output,
        "result": rounds[0].results[0].to_dict(),
        "second": second.output,
        "conversation": agent.conversation.to_json(),
    }), flush=True)
    """
)


@pytest.mark.sigint
def test_ctrl_c_in_a_plain_script_cancels_cleanly():
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "TOOL STARTED"
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    data = json.loads(out)
    assert data["outcome"] == "KeyboardInterrupt"
    assert data["elapsed"] < 5  # not waiting for the 60 s tool
    assert data["stop_reason"] == "cancelled"
    assert data["output"] == "[run cancelled]"
    assert data["result"]["ok"] is False
    assert data["result"]["error"].startswith("cancelled while running after ")
    assert data["second"] == "second run fine"
    from nbagent import Conversation

    assert_history_valid(Conversation.from_json(data["conversation"]))


@pytest.mark.sigint
def test_kernel_interrupt_during_run_sync_cancels_and_next_run_works():
    started = threading.Event()

    @tool
    def wait_long() -> str:
        """Waits."""
        started.set()
        time.sleep(20)
        return "never"

    def script(request):
        if request.prompt == "first":
            return reply(calls=[call("wait_long")])
        return "next ok"

    agent = Agent(ScriptedModel(script), tools=[wait_long])

    def interrupter():
        started.wait(10)
        time.sleep(0.1)
        _thread.interrupt_main()  # what a Jupyter kernel interrupt does

    threading.Thread(target=interrupter, daemon=True).start()
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        agent.run_sync("first")
    assert time.perf_counter() - t0 < 5
    assert agent.last_result is not None
    assert agent.last_result.stop_reason == "cancelled"
    assert_history_valid(agent.conversation)
    assert agent.run_sync("second").output == "next ok"


def test_leaving_stream_sync_early_cancels_and_waits_for_a_valid_history():
    agent = Agent(ScriptedModel(lambda r: "word " * 200, chunk_size=5, delay=0.01))
    for n, event in enumerate(agent.stream_sync("talk")):
        if isinstance(event, TextDelta) and n > 5:
            break
    # Once the loop is left, the run has wrapped up.
    assert agent.last_result is not None
    assert agent.last_result.stop_reason == "cancelled"
    assert_history_valid(agent.conversation)
    assert len(agent.conversation.messages) == 2


def test_sync_call_from_an_async_tool_is_refused_clearly():
    inner = Agent(ScriptedModel(lambda r: "inner"))

    @tool
    async def nested() -> str:
        """Calls another agent the wrong way."""
        return inner.run_sync("x").output

    @tool
    def nested_sync() -> str:
        """Calls another agent from a worker thread: fine."""
        return inner.run_sync("y").output

    def script(request):
        if not request.tool_results:
            return reply(calls=[call("nested"), call("nested_sync")])
        return " | ".join(r.content for r in request.tool_results)

    out = Agent(ScriptedModel(script), tools=[nested, nested_sync]).run_sync("go").output
    first, second = out.split(" | ")
    assert first.startswith("Error: NbAgentError: a sync nbagent call (run_sync/stream_sync)")
    assert "use `await agent.run(...)`" in first
    assert second == "inner"


def test_close_from_an_async_tool_is_refused_clearly_and_from_a_worker_closes():
    inner = Agent(ScriptedModel(lambda r: "inner"))

    @tool
    async def close_async() -> str:
        """Closes another agent the wrong way (it would wait on its own loop)."""
        inner.close()
        return "closed"

    @tool
    def close_sync() -> str:
        """Closes another agent from a worker thread: fine."""
        inner.close()
        return "closed"

    def script(request):
        if not request.tool_results:
            return reply(calls=[call("close_async"), call("close_sync")])
        return " | ".join(r.content for r in request.tool_results)

    out = Agent(ScriptedModel(script), tools=[close_async, close_sync]).run_sync("go").output
    first, second = out.split(" | ")
    assert first.startswith("Error: NbAgentError: a sync nbagent call")
    assert "`await agent.aclose()` instead of close()" in first
    assert second == "closed"


def test_nbagent_log_env_var_turns_on_debug_logging_to_stderr():
    code = textwrap.dedent(
        """
        from nbagent import Agent, tool
        from nbagent.testing import ScriptedModel, call, reply

        @tool
        def add(a: int, b: int) -> int:
            \"\"\"Add.\"\"\"
            return a + b

        def script(request):
            if not request.tool_results:
                return reply(calls=[call("add", a=1, b=2)])
            return "three"

        print(Agent(ScriptedModel(script), tools=[add]).run_sync("1+2").output)
        """
    )
    env = {**os.environ, "NBAGENT_LOG": "debug"}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.stdout.strip() == "three"
    log = proc.stderr
    for expected in (
        "nbagent INFO run started: model=scripted tools=['add']",
        "nbagent INFO round 1: model request (forced final=False)",
        "nbagent DEBUG model replied in",
        "nbagent INFO call call_1 add({'a': 1, 'b': 2})",
        "nbagent INFO result call_1 add: ok in",
        "nbagent INFO round 1 finished: 1 calls, 0 failed",
        "nbagent INFO run finished: stop_reason=complete rounds=1",
    ):
        assert expected in log, (expected, log)
    quiet = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "NBAGENT_LOG"},
        timeout=60,
    )
    assert quiet.stdout.strip() == "three" and "nbagent" not in quiet.stderr


def test_logger_records_failures(caplog):
    @tool
    def bad() -> None:
        """Fails."""
        raise KeyError("nope")

    def script(request):
        return reply(calls=[call("bad")]) if not request.tool_results else "ok"

    with caplog.at_level("INFO", logger="nbagent"):
        Agent(ScriptedModel(script), tools=[bad]).run_sync("go")
    messages = [r.getMessage() for r in caplog.records if r.name == "nbagent"]
    assert any("bad: error: KeyError: 'nope'" in m for m in messages), messages


@pytest.mark.sigint
@pytest.mark.parametrize("delay", [0.0, 0.001, 0.003, 0.01, 0.03])
def test_interrupt_at_any_moment_ends_promptly_with_valid_history(delay):
    # The interrupt may land before the run exists, while it starts, or mid-stream.
    agent = Agent(ScriptedModel(lambda r: "slow words " * 100, chunk_size=4, delay=0.01))

    def interrupter():
        time.sleep(delay)
        _thread.interrupt_main()

    thread = threading.Thread(target=interrupter, daemon=True)
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        thread.start()
        agent.run_sync("talk")
    assert time.perf_counter() - t0 < 5
    thread.join()
    assert_history_valid(agent.conversation)
    if agent.conversation.messages:
        assert agent.conversation.messages[-1].stop_reason == "cancelled"
    agent.provider.script = lambda r: "after"  # type: ignore[attr-defined]
    assert agent.run_sync("again").output == "after"
