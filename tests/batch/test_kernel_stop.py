"""``%%agent --over`` and ``agent.map`` in a real ipykernel: live progress, interrupt, resume."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.kernel import Kernel, displays, kernel_environment

pytestmark = pytest.mark.kernel

SETUP = """
%load_ext nbagent
import pandas as pd
import nbagent
from nbagent.testing import ScriptedModel

model = ScriptedModel(
    lambda request: "label " + [m for m in request.messages if m.role == "user"][-1].content,
    delay=0.03,
)
nbagent.magic.use(nbagent.Agent(model, tools=[]))
tickets = pd.DataFrame({"subject": [f"ticket {i}" for i in range(300)]})
"""


@pytest.fixture
def own_kernel(tmp_path: Path) -> Iterator[Kernel]:
    k = Kernel(kernel_environment(tmp_path / "nbagent-home"), tmp_path)
    try:
        k.run(SETUP)
        yield k
    finally:
        k.close()


def _done(html: str) -> int:
    found = re.search(r"map (\d+)/", html)
    return int(found.group(1)) if found else 0


def _interrupt_after(kernel: Kernel, code: str, rows: int) -> list[dict[str, Any]]:
    interrupted: list[float] = []

    def watch(msg: dict[str, Any]) -> None:
        html = msg["content"].get("data", {}).get("text/html", "")
        if not interrupted and _done(html) >= rows:
            interrupted.append(time.monotonic())
            kernel.interrupt()

    reply, messages = kernel.execute(code, on_message=watch, timeout=120)
    assert interrupted, [m["content"] for m in messages]
    assert reply["content"]["status"] == "ok", reply["content"]
    return messages


def test_interrupting_over_keeps_finished_rows_and_the_same_cell_resumes(own_kernel: Kernel):
    kernel = own_kernel
    cell = "%%agent --over tickets --into labels --concurrency 4\nLabel this: {subject}"
    messages = _interrupt_after(kernel, cell, rows=8)
    shown = displays(messages)
    # One live display, updated in place (throttled), then the summary panel.
    live = [m for m in shown if 'class="nbagent-map"' in m["content"]["data"].get("text/html", "")]
    assert len({m["content"]["transient"]["display_id"] for m in live}) == 1
    assert 1 <= len([m for m in live if m["msg_type"] == "update_display_data"]) < 100
    summary = shown[-1]["content"]["data"]["text/html"]
    assert "nbagent-map-summary" in summary and "stopped" in summary and "labels" in summary
    counts = kernel.run(
        "print(labels['error'].isna().sum(), (labels['error'] == 'not run: stopped').sum(), "
        "len(model.requests))"
    ).split()
    finished, not_run, asked = map(int, counts)
    assert finished >= 8 and finished + not_run == 300
    assert asked <= finished + 4  # rows in flight at the interrupt were cancelled
    # The same cell again: finished rows come from the journal, only the rest is asked.
    kernel.run("before = len(model.requests)")
    reply, _ = kernel.execute(cell, timeout=120)
    assert reply["content"]["status"] == "ok"
    out = kernel.run(
        "print(labels['error'].isna().all(), len(model.requests) - before, labels.loc[7, 'output'])"
    )
    again_ok, asked_again, label = out.split(maxsplit=2)
    assert again_ok == "True" and int(asked_again) == 300 - finished
    assert label.strip() == "label Label this: ticket 7"


def test_interrupting_agent_map_returns_the_partial_frame(own_kernel: Kernel):
    kernel = own_kernel
    code = (
        "out = nbagent.magic.current_agent().map(tickets, 'Sort: {subject}', concurrency=2)\n"
        "print('returned', out['error'].isna().sum(), (out['error'] == 'not run: stopped').sum())"
    )
    messages = _interrupt_after(kernel, code, rows=4)
    printed = "".join(m["content"].get("text", "") for m in messages if m["msg_type"] == "stream")
    _, finished, not_run = printed.split()
    assert int(finished) >= 4 and int(finished) + int(not_run) == 300
