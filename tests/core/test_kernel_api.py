"""The Python API in a real ipykernel: run_sync under the kernel's running event loop,
and a kernel interrupt (the notebook's Stop button) cancelling a run cleanly."""

from __future__ import annotations

import json
import time

import pytest

from tests.support.kernel import Kernel, kernel_environment

pytestmark = pytest.mark.kernel

SETUP = '''
import asyncio, json, time
from nbagent import Agent, tool
from nbagent.testing import ScriptedModel, call, reply

@tool
def wait_long(seconds: float) -> str:
    """Waits."""
    print("TOOL STARTED", flush=True)
    time.sleep(seconds)
    return "waited"

def script(request):
    if request.prompt == "long" and not request.tool_results:
        return reply("Starting.", [call("wait_long", seconds=60)])
    if not request.tool_results and request.prompt == "short":
        return reply(calls=[call("wait_long", seconds=0)])
    return f"answer to {request.prompt}"

agent = Agent(ScriptedModel(script), tools=[wait_long])
asyncio.get_running_loop()  # the kernel runs an event loop: asyncio.run would fail here
'''


@pytest.fixture
def kernel(tmp_path):
    started = Kernel(kernel_environment(tmp_path), tmp_path)
    started.run(SETUP)
    yield started
    started.close()


def test_run_sync_in_a_kernel_cell_and_interrupt_cancels_cleanly(kernel):
    assert kernel.run('print(agent.run_sync("short").output)') == "TOOL STARTED\nanswer to short\n"

    interrupted = []

    def on_message(msg):
        text = msg["content"].get("text", "") if msg["msg_type"] == "stream" else ""
        if "TOOL STARTED" in text and not interrupted:
            interrupted.append(time.monotonic())
            kernel.interrupt()  # what the notebook's Stop button does

    reply, _ = kernel.execute('agent.run_sync("long")', on_message=on_message)
    assert interrupted and reply["content"].get("ename") == "KeyboardInterrupt"
    assert time.monotonic() - interrupted[0] < 10  # not the 60 s the tool sleeps

    check = (
        "r = agent.last_result\n"
        "rounds = agent.conversation.messages[-1].rounds\n"
        "print(json.dumps([r.stop_reason, r.output, rounds[0].results[0].error,"
        " agent.run_sync('after').output, len(agent.conversation.messages)]))"
    )
    stop_reason, output, error, after, count = json.loads(kernel.run(check))
    assert [stop_reason, output, after] == ["cancelled", "[run cancelled]", "answer to after"]
    assert count == 6
    # The tool had started: it says so, for how long, and that it may still finish.
    assert error.startswith("cancelled while running after ")
    assert error.endswith(" ms; a sync function may still finish in the background")
