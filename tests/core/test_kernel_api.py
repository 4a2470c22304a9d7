"""The Python API in a real ipykernel: run_sync under the kernel's running event loop,
and a kernel interrupt (the notebook's Stop button) cancelling a run cleanly."""

from __future__ import annotations

import json
import os
import queue
import time

import pytest
from jupyter_client import KernelManager

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


def execute(kc, code, *, on_stream=None, timeout=60.0):
    msg_id = kc.execute(code)
    outputs, error = [], None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = kc.get_iopub_msg(timeout=0.1)
        except queue.Empty:
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            outputs.append(content["text"])
            if on_stream is not None:
                on_stream(content["text"])
        elif kind == "error":
            error = content["ename"]
        elif kind == "status" and content["execution_state"] == "idle":
            return "".join(outputs), error
    raise TimeoutError(code)


@pytest.fixture
def kernel(tmp_path):
    km = KernelManager(kernel_name="python3")
    env = {**os.environ, "NBAGENT_HOME": str(tmp_path)}
    km.start_kernel(env=env, cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    out, error = execute(kc, SETUP)
    assert error is None, out
    yield km, kc
    kc.stop_channels()
    km.shutdown_kernel(now=True)


def test_run_sync_in_a_kernel_cell_and_interrupt_cancels_cleanly(kernel):
    km, kc = kernel
    out, error = execute(kc, 'print(agent.run_sync("short").output)')
    assert (error, out) == (None, "TOOL STARTED\nanswer to short\n")

    interrupted = []

    def on_stream(text):
        if "TOOL STARTED" in text and not interrupted:
            interrupted.append(time.monotonic())
            km.interrupt_kernel()  # what the notebook's Stop button does

    out, error = execute(kc, 'agent.run_sync("long")', on_stream=on_stream)
    assert interrupted and error == "KeyboardInterrupt"
    assert time.monotonic() - interrupted[0] < 10  # not the 60 s the tool sleeps

    check = (
        "r = agent.last_result\n"
        "rounds = agent.conversation.messages[-1].rounds\n"
        "print(json.dumps([r.stop_reason, r.output, rounds[0].results[0].error,"
        " agent.run_sync('after').output, len(agent.conversation.messages)]))"
    )
    out, error = execute(kc, check)
    assert error is None, out
    assert json.loads(out) == [
        "cancelled",
        "[run cancelled]",
        "not run: the run was cancelled",
        "answer to after",
        6,
    ]
