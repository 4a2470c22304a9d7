"""The kernel agent in a real ipykernel: the sales notebook of issue 11, approval, interrupts.

A scripted model (``nbagent.testing.ScriptedModel``) inside the kernel calls the
kernel tools; the tests read what it received from ``model.requests``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.kernel import Kernel, kernel_environment, last_html

pytestmark = pytest.mark.kernel

SALES = """
%load_ext nbagent
import json, os
import numpy as np
import pandas as pd
import nbagent
from nbagent.testing import ScriptedModel, reply, call

rng = np.random.default_rng(11)
sales = pd.DataFrame({
    "region": rng.choice(["north", "south", "east", "west"], 50),
    "month": np.arange(50) % 12 + 1,
    "units": rng.integers(1, 100, 50),
    "revenue": rng.uniform(10, 1000, 50).round(2),
})

CODE = "totals = sales.groupby('region')['revenue'].sum()\\ntotals"

def script(request):
    if request.round_index == 0:
        return reply("", [call("list_variables")])
    if request.round_index == 1:
        return reply("", [call("run_python", code=CODE)])
    return reply("Totals computed.")

model = ScriptedModel(script)
nbagent.magic.use(nbagent.Agent(model, tools=[], store=None))

def received():
    first = model.requests[0].request
    rounds = model.requests[-1].messages[-1].rounds
    return json.dumps({
        "system": first.system,
        "tools": [t.name for t in first.tools],
        "results": [[r.name, r.ok, r.content, r.approval] for t in rounds for r in t.results],
    })
"""


def _received(kernel: Kernel) -> dict[str, Any]:
    return json.loads(kernel.run("print(received())"))  # type: ignore[no-any-return]


def test_sales_notebook_with_approval_allowed(shared_kernel: Kernel) -> None:
    shared_kernel.run(SALES + "\nos.environ['NBAGENT_APPROVAL'] = 'allow:run_python'")
    reply, _ = shared_kernel.execute("%%agent --kernel\nWhat is the revenue per region?")
    assert reply["content"]["status"] == "ok"
    seen = _received(shared_kernel)
    inventory = (
        "sales: DataFrame 50 rows × 4 columns [region: str, month: int64, units: int64, "
        "revenue: float64]"
    )
    # The first request already carries the inventory, in the system message.
    assert inventory in seen["system"]
    assert set(seen["tools"]) >= {"list_variables", "inspect_variable", "run_python"}
    (listed, ran) = seen["results"]
    assert listed[0] == "list_variables" and inventory in listed[2]
    assert "rng: numpy.random._generator.Generator" in listed[2]
    assert "model" not in listed[2] and "script" not in listed[2]  # nbagent objects, functions
    expected = shared_kernel.run(
        "print(sales.groupby('region')['revenue'].sum().to_csv(header=True))"
    )
    assert ran[:2] == ["run_python", True]
    assert ran[3].startswith("approved by policy NBAGENT_APPROVAL=allow:run_python")
    assert expected.strip() in ran[2]
    # The code ran in the user's namespace and left `totals` there, not in the history.
    check = "print(type(totals).__name__, totals.equals(sales.groupby('region')['revenue'].sum()))"
    assert shared_kernel.run(check).split() == ["Series", "True"]
    history = shared_kernel.run("print(any(cell.startswith('totals =') for cell in In))")
    assert history.strip() == "False"


def test_sales_notebook_with_the_deny_policy(shared_kernel: Kernel) -> None:
    shared_kernel.run(SALES + "\nos.environ.pop('NBAGENT_APPROVAL', None)")
    shared_kernel.run("globals().pop('totals', None)")
    reply, _ = shared_kernel.execute("%%agent --kernel\nWhat is the revenue per region?")
    assert reply["content"]["status"] == "ok"
    seen = _received(shared_kernel)
    name, ok, content, approval = seen["results"][1]
    assert (name, ok) == ("run_python", False)
    assert "denied" in content and approval.startswith("denied by policy NBAGENT_APPROVAL=deny")
    assert shared_kernel.run("print('totals' in globals())").strip() == "False"


RUN = """
%load_ext nbagent
import os
import nbagent
from nbagent.kernel import kernel_tools
from nbagent.testing import ScriptedModel, reply, call
os.environ['NBAGENT_APPROVAL'] = 'allow:run_python'

def run_model(code, **tool_options):
    def script(request):
        if request.round_index == 0:
            return reply("", [call("run_python", code=code)])
        return reply("ok")
    model = ScriptedModel(script)
    tools = kernel_tools(**tool_options)
    nbagent.magic.use(nbagent.Agent(model, tools=tools, store=None))
    return model

def last_result(model):
    return model.requests[-1].messages[-1].rounds[-1].results[-1]
"""


def test_run_python_runs_on_the_main_thread_and_shows_figures(shared_kernel: Kernel) -> None:
    shared_kernel.run(RUN)
    code = (
        "import threading\\nimport matplotlib.pyplot as plt\\n"
        "plt.plot([1, 3, 2])\\nprint('drawn')\\nthreading.current_thread().name"
    )
    shared_kernel.run(f'model = run_model("{code}")')
    reply, messages = shared_kernel.execute("%%agent\nplot it")
    assert reply["content"]["status"] == "ok"
    out = shared_kernel.run(
        "r = last_result(model)\nprint(r.ok)\nprint(r.content)\n"
        "print([(i.media_type, i.width <= 1024) for i in r.images])"
    )
    assert "stdout:\ndrawn" in out and "'MainThread'" in out
    assert "[image 1:" in out and "attached]" in out
    assert "[('image/png', True)]" in out
    # The panel shows the code's value (the thread's name): the inline backend shows the
    # figure, once, below the cell.
    panels = [m for m in messages if "text/html" in m["content"].get("data", {})]
    assert "<img" not in panels[-1]["content"]["data"]["text/html"]
    assert [m for m in messages if m["msg_type"] == "display_data"
            and "image/png" in m["content"]["data"]] != []  # fmt: skip


@pytest.mark.parametrize("last_line", ["ax.figure", "ax", "done = True"])
def test_a_plot_the_panel_shows_is_not_shown_again_below_the_cell(
    shared_kernel: Kernel, last_line: str
) -> None:
    # Tutorial 06's plot: the figure is the code's value (or its only plot).
    shared_kernel.run(RUN)
    code = "import matplotlib.pyplot as plt\\nax = plt.gca()\\nax.plot([1, 3, 2])\\n" + last_line
    shared_kernel.run(f'model = run_model("{code}")')
    reply, messages = shared_kernel.execute("%%agent\nplot it")
    assert reply["content"]["status"] == "ok"
    assert last_html(messages).count('<img class="nba-image"') == 1  # in the round panel
    assert [m for m in messages if m["msg_type"] == "display_data"
            and "image/png" in m["content"]["data"]] == []  # fmt: skip
    # the figure is still the user's to show or save
    assert shared_kernel.run("print(len(ax.figure.axes[0].lines))") == "1\n"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("def broken(:\\n    pass", "the code does not parse: SyntaxError"),
        ("1 / 0", "the code raised ZeroDivisionError: division by zero"),
        ("print('x' * 50_000_000)", "stdout (50,000,001 characters, middle cut):"),
        ("raise SystemExit(3)", "the code raised SystemExit: 3"),
    ],
)
def test_bad_code_reaches_the_model_as_a_clear_result(
    shared_kernel: Kernel, code: str, expected: str
) -> None:
    shared_kernel.run(RUN)
    shared_kernel.run(f'model = run_model("{code}")')
    reply, _ = shared_kernel.execute("%%agent\nrun it", timeout=120)
    assert reply["content"]["status"] == "ok"
    out = shared_kernel.run("r = last_result(model)\nprint(len(r.content))\nprint(r.content)")
    assert expected in out
    assert int(out.split("\n", 1)[0]) <= 4_100  # the per-call budget holds
    assert shared_kernel.run("print(1 + 1)").strip() == "2"  # the kernel lives on


def test_code_that_never_ends_is_interrupted_at_the_tool_timeout(shared_kernel: Kernel) -> None:
    shared_kernel.run(RUN)
    shared_kernel.run(
        'model = run_model("import time\\nwhile True: time.sleep(0.05)", run_timeout=2)'
    )
    reply, _ = shared_kernel.execute("%%agent\nloop", timeout=60)
    assert reply["content"]["status"] == "ok"
    out = shared_kernel.run("print(last_result(model).content)")
    assert "ran past the 2 s limit and was interrupted" in out
    assert shared_kernel.run("print('alive')").strip() == "alive"


@pytest.fixture
def own_kernel(tmp_path: Path) -> Iterator[Kernel]:
    kernel = Kernel(kernel_environment(tmp_path / "home"), tmp_path)
    try:
        yield kernel
    finally:
        kernel.close()


def test_kernel_interrupt_stops_a_long_run_python(own_kernel: Kernel, tmp_path: Path) -> None:
    flag = tmp_path / "started"
    own_kernel.run(RUN)
    code = f"import time\\nopen({str(flag)!r}, 'w').close()\\nfor i in range(600): time.sleep(0.1)"
    own_kernel.run(f'model = run_model("{code}")')

    def interrupt_when_started() -> None:
        deadline = time.monotonic() + 60
        while not flag.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        own_kernel.interrupt()

    threading.Thread(target=interrupt_when_started, daemon=True).start()
    started = time.monotonic()
    reply, _ = own_kernel.execute("%%agent\nlong", timeout=60)
    assert time.monotonic() - started < 30  # not the 60 s the loop would take
    assert reply["content"]["status"] == "ok"
    out = own_kernel.run(
        "r = nbagent.magic.current_agent().conversation.messages[-1].rounds[-1].results[-1]\n"
        "print(r.ok, i < 599, nbagent.magic.current_agent().last_result.stop_reason)\n"
        "print(r.content)"
    )
    # It started and stopped long before its end, the model was told, and the run stopped.
    assert "False True cancelled" in out
    assert "the user interrupted the kernel; the code was stopped" in out
    assert own_kernel.run("print(sum(range(4)))").strip() == "6"  # the next cell works


@pytest.mark.parametrize(("answer", "defined"), [("y", "True"), ("n", "False")])
def test_the_cell_shows_the_code_before_asking(
    shared_kernel: Kernel, answer: str, defined: str
) -> None:
    shared_kernel.run(SALES + "\nos.environ.pop('NBAGENT_APPROVAL', None)")
    shared_kernel.run("globals().pop('totals', None)")
    reply, messages = shared_kernel.execute(
        "%%agent --kernel\nrevenue per region?", allow_stdin=True, stdin_answer=answer
    )
    assert reply["content"]["status"] == "ok"
    kinds = [m["msg_type"] for m in messages]
    asked = kinds.index("input_request")
    shown = [
        i
        for i, m in enumerate(messages)
        if m["msg_type"] == "display_data"
        and "nbagent-approval-code" in m["content"]["data"].get("text/html", "")
    ]
    # The code is shown with the question (iopub and stdin are separate channels, so
    # their arrival order here says nothing); with "n" it is shown and never run.
    assert shown
    code = messages[shown[0]]["content"]["data"]["text/plain"]
    assert code == "totals = sales.groupby('region')['revenue'].sum()\ntotals"
    assert "allow run_python(" in messages[asked]["content"]["prompt"]
    assert shared_kernel.run("print('totals' in globals())").strip() == defined
    approval = _received(shared_kernel)["results"][1][3]
    assert approval == ("approved by user" if answer == "y" else "denied by user")
