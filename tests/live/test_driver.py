"""The live-run driver with a sink written here: what adding a surface takes.

A surface is four methods (start, update, ask, finish); the driver runs the agent
from sync code (a cell) or async code (a widget) and owns the throttle, the
approval bridge, Ctrl-C and Stop. These tests drive it with a recording sink.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from nbagent import ProviderError, tool
from nbagent.live import LiveRun, Throttle, stop_text
from nbagent.render import Transcript
from nbagent.testing import call, reply
from tests.support.agents import scripted_agent


class RecordingSink:
    """Keeps what the surface was asked to show, in order."""

    def __init__(self, *, interval: float = 0.1, answer: Any = (True, "tester")) -> None:
        self.interval = interval
        self.answer = answer
        self.log: list[tuple[str, Any]] = []
        self.shown = ""

    def start(self, transcript: Transcript) -> None:
        self.log.append(("start", transcript.plain()))

    def update(self, transcript: Transcript) -> None:
        self.shown = transcript.plain()
        self.log.append(("update", self.shown))

    def ask(self, call: Any, tool: Any) -> Any:
        self.log.append(("ask", (call.name, self.shown)))
        return self.answer

    def finish(self, transcript: Transcript, *, error: BaseException | None) -> None:
        result = transcript.result
        self.log.append(("finish", (result and result.stop_reason, transcript.interrupted, error)))

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.log]


@tool(register=False, requires_approval=True)
def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def approval_script(request: Any) -> Any:
    if request.round_index == 0:
        return reply("I will delete it.", [call("delete", path="/tmp/x")])
    return reply("Result: " + request.tool_results[-1].content)


def test_sync_run_shows_every_step_and_the_sink_answers_approvals() -> None:
    agent = scripted_agent(approval_script, tools=[delete], chunk_size=3)
    sink = RecordingSink()
    run = LiveRun(agent, "delete it", sink)
    result = run.run()
    assert result is not None and result.output == "Result: deleted /tmp/x"
    assert result.rounds[0].results[0].approval == "approved by tester"
    kinds = sink.kinds()
    assert kinds[0] == "start" and kinds[-1] == "finish" and kinds.count("ask") == 1
    # The question comes after an update showing everything that led to it.
    name, shown = sink.log[kinds.index("ask")][1]
    assert name == "delete" and "Using Delete" in shown
    assert 'delete(path="/tmp/x") -> running' in shown
    assert kinds[-2] == "update"  # a final update, whatever the throttle held back
    assert sink.log[-1][1] == ("complete", False, None)
    assert run.updates == kinds.count("update")


async def test_async_run_awaits_an_async_question() -> None:
    agent = scripted_agent(approval_script, tools=[delete])
    sink = RecordingSink()

    async def ask_later(call: Any, tool: Any) -> tuple[bool, str]:
        sink.log.append(("ask", (call.name, sink.shown)))
        await asyncio.sleep(0.05)
        return False, "a button"

    sink.ask = ask_later  # type: ignore[method-assign]
    result = await LiveRun(agent, "delete it", sink).run_async()
    assert result is not None and result.rounds[0].results[0].approval == "denied by a button"
    assert sink.kinds()[-1] == "finish"


async def test_stop_mid_stream_and_the_stop_text() -> None:
    agent = scripted_agent(["word " * 2000], chunk_size=5, delay=0.01)
    sink = RecordingSink()
    run = LiveRun(agent, "talk", sink)
    task = asyncio.ensure_future(run.run_async())
    while "word word" not in sink.shown:
        await asyncio.sleep(0.01)
    started = time.monotonic()
    run.cancel()
    result = await asyncio.wait_for(task, 1.0)
    assert time.monotonic() - started < 1.0
    assert result is not None and result.stop_reason == "cancelled"
    assert sink.log[-1][1] == ("cancelled", True, None)
    assert stop_text(result) == "Stopped: cancelled"


async def test_stop_while_the_sink_asks_withdraws_the_question() -> None:
    agent = scripted_agent(approval_script, tools=[delete])
    sink = RecordingSink()
    asked = asyncio.Event()
    withdrawn: list[str] = []

    async def never_answered(call: Any, tool: Any) -> bool:
        asked.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            withdrawn.append(call.name)  # e.g. the widget removes its buttons
            raise
        return True

    sink.ask = never_answered  # type: ignore[method-assign]
    run = LiveRun(agent, "delete it", sink)
    task = asyncio.ensure_future(run.run_async())
    await asyncio.wait_for(asked.wait(), 5)
    run.cancel()
    result = await asyncio.wait_for(task, 1.0)
    assert withdrawn == ["delete"]
    assert result is not None and result.stop_reason == "cancelled"
    assert not result.rounds[0].results[0].ok


def test_ctrl_c_at_the_question_cancels_the_run() -> None:
    agent = scripted_agent(approval_script, tools=[delete])
    sink = RecordingSink()

    def interrupted(call: Any, tool: Any) -> bool:
        raise KeyboardInterrupt  # what Ctrl-C at an input() prompt does

    sink.ask = interrupted  # type: ignore[method-assign]
    run = LiveRun(agent, "delete it", sink)
    result = run.run()
    assert run.interrupted and result is not None and result.stop_reason == "cancelled"
    assert not result.rounds[0].results[0].ok  # the call never ran
    assert sink.log[-1][1] == ("cancelled", True, None)


def test_an_agent_approver_decides_instead_of_the_sink() -> None:
    agent = scripted_agent(approval_script, tools=[delete], approver=lambda c, t: (True, "policy"))
    sink = RecordingSink()
    result = LiveRun(agent, "delete it", sink).run()
    assert "ask" not in sink.kinds()
    assert result is not None and result.rounds[0].results[0].approval == "approved by policy"


def test_a_failed_run_is_shown_then_raised() -> None:
    def script(request: Any) -> Any:
        raise ProviderError("scripted", 503, "overloaded", "try later")

    sink = RecordingSink()
    with pytest.raises(ProviderError, match="overloaded"):
        LiveRun(scripted_agent(script), "hi", sink).run()
    reason, interrupted, error = sink.log[-1][1]
    assert reason == "error" and not interrupted and isinstance(error, ProviderError)


def test_updates_are_throttled_with_a_final_one() -> None:
    agent = scripted_agent(["x" * 600], chunk_size=1, delay=0.001)
    sink = RecordingSink()
    started = time.monotonic()
    LiveRun(agent, "stream", sink).run()
    elapsed = time.monotonic() - started
    updates = sink.kinds().count("update")
    assert 2 <= updates <= elapsed / 0.1 + 2
    assert sink.shown.startswith("x" * 600)


def test_throttle_sends_at_most_once_per_interval_and_never_loses_the_last() -> None:
    sent: list[float] = []
    throttle = Throttle(lambda: sent.append(time.monotonic()), interval=0.05)
    assert not throttle.poll()  # nothing changed
    throttle.changed()
    assert throttle.poll() and len(sent) == 1
    throttle.changed()
    assert not throttle.poll()  # too soon: held back
    time.sleep(0.06)
    assert throttle.poll() and len(sent) == 2  # ... and sent once due
    assert throttle.poll(force=True) and throttle.updates == 3
