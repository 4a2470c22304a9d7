"""Item 11: ``run_python`` outside a kernel leaves the process's stdout and stderr alone.

Code that ignored its interrupt left ``sys.stdout``/``sys.stderr`` replaced for the
rest of the process (later prints vanished), and while it ran, other threads' prints
were captured into the model's text. Each scenario runs in a real child process
(a script using ``Agent.run_sync``), whose real stdout the test reads.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.hardening.faults import PRELUDE, ROOT
from tests.support.env import child_environment

SCENARIO = """
from nbagent.kernel import kernel_tools

STUBBORN = '''
import time
print("stubborn started")
for _ in range(400):
    try:
        time.sleep(0.05)
    except KeyboardInterrupt:
        print("ignoring the interrupt")
'''
CHATTY = '''
import time
print("from the code")
time.sleep(0.5)
'''

def script(request):
    if request.tool_results:
        return request.tool_results[-1].content
    return reply(calls=[call("run_python", code=globals()[request.prompt])])

namespace = {}
tools = kernel_tools(namespace=namespace, run_timeout=2.0, approval=False)
agent = Agent(ScriptedModel(script), tools=tools, store=None)
stop = threading.Event()

def chatter():
    while not stop.is_set():
        print("other thread", flush=True)
        time.sleep(0.05)

other = threading.Thread(target=chatter, daemon=True)
other.start()
chatty = agent.run_sync("CHATTY").output
stop.set()
other.join()
stubborn = agent.run_sync("STUBBORN").output
print("printed after the stubborn code", flush=True)
sys.stderr.write("stderr after the stubborn code\\n")
done(chatty=chatty, stubborn=stubborn)
"""


def test_prints_after_and_beside_run_python_reach_the_process_streams(tmp_path: Path):
    source = PRELUDE + textwrap.dedent(SCENARIO)
    env = child_environment(NBAGENT_HOME=str(tmp_path / "home"), PYTHONPATH=str(ROOT))
    child = subprocess.run(
        [sys.executable, "-c", source], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert child.returncode == 0, child.stderr
    facts = json.loads(child.stdout.strip().splitlines()[-1])
    # Beside: the other thread's prints went to the real stdout, not into the model's text.
    assert "from the code" in facts["chatty"] and "other thread" not in facts["chatty"]
    assert child.stdout.count("other thread") >= 5
    # After: the stubborn code still runs, the result says so, and the streams are back.
    assert "did not stop when interrupted: it is still running" in facts["stubborn"]
    assert "printed after the stubborn code" in child.stdout
    assert "stderr after the stubborn code" in child.stderr
    assert "ignoring the interrupt" not in child.stdout  # its prints stay its own
