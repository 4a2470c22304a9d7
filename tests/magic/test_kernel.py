"""%%agent in a real ipykernel, driven through jupyter_client and nbclient.

Tests that never interrupt the kernel share one (``kernel``); tests that interrupt
it get their own (``own_kernel``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.support.html import HtmlFacts, assert_inert
from tests.support.kernel import (
    Kernel,
    displays,
    kernel_environment,
    last_html,
    notebook,
    run_notebook,
)

pytestmark = pytest.mark.kernel

SETUP = '''
%load_ext nbagent
import time
import nbagent
from nbagent.testing import ScriptedModel, reply, call

@nbagent.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

@nbagent.tool(timeout=60)
def slow() -> str:
    """Takes ten seconds."""
    time.sleep(10)
    return "late"

@nbagent.tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"

def script(request):
    p = request.prompt
    if p.startswith("add") and request.round_index == 0:
        return reply("Adding.", [call("add", a=2, b=3)])
    if p.startswith("slow tool") and request.round_index == 0:
        return reply("Calling slow.", [call("slow")])
    if p.startswith("delete") and request.round_index == 0:
        return reply("", [call("delete", path="/tmp/x")])
    if p.startswith("long"):
        return "word " * 3000
    if request.tool_results:
        return "Result: " + request.tool_results[-1].content
    return "You said: " + p

fast = ScriptedModel(script)
slow_stream = ScriptedModel(script, chunk_size=5, delay=0.02)
fast_stream = ScriptedModel(script, chunk_size=5, delay=0.001)
%agent model fast
'''


@pytest.fixture(scope="module")
def kernel(shared_kernel: Kernel) -> Kernel:
    """The shared kernel with the setup cell run (tests using it never interrupt it)."""
    shared_kernel.run(SETUP)
    return shared_kernel


@pytest.fixture
def own_kernel(tmp_path: Path) -> Iterator[Kernel]:
    """A kernel of this test's own, for tests that interrupt it."""
    k = Kernel(kernel_environment(tmp_path / "nbagent-home"), tmp_path)
    k.run(SETUP)
    yield k
    k.close()


def test_live_updates_are_throttled_and_target_one_display(kernel: Kernel) -> None:
    reply, messages = kernel.execute("%%agent -m fast_stream\nlong story please")
    assert reply["content"]["status"] == "ok"
    shown = displays(messages)
    first, updates = shown[0], shown[1:]
    assert first["msg_type"] == "display_data"
    display_id = first["content"]["transient"]["display_id"]
    assert all(m["msg_type"] == "update_display_data" for m in updates)
    assert {m["content"]["transient"]["display_id"] for m in updates} == {display_id}
    # 3,000 chunks, yet at most ~10 updates a second (+ the final one); kernel send times
    sent = [datetime.fromisoformat(str(m["header"]["date"])).timestamp() for m in shown]
    elapsed = sent[-1] - sent[0]
    assert 3 <= len(updates) <= elapsed * 10 + 2, (len(updates), elapsed)
    gaps = [b - a for a, b in zip(sent[1:-2], sent[2:-1], strict=True)]
    assert min(gaps) > 0.09, gaps  # the final update may follow its predecessor closely
    facts = HtmlFacts(last_html(messages))
    assert facts.text.count("word") == 3000
    assert kernel.run("print(len(_agent.output), _agent.stop_reason)") == "15000 complete\n"


def _interrupt_when(kernel: Kernel, code: str, ready: Any) -> tuple[float, list[dict[str, Any]]]:
    """Run ``code``; interrupt the kernel when ``ready(html)``; seconds from interrupt to idle."""
    interrupted_at: list[float] = []

    def watch(msg: dict[str, Any]) -> None:
        data = msg["content"].get("data", {})
        if not interrupted_at and "text/html" in data and ready(data["text/html"]):
            interrupted_at.append(time.monotonic())
            kernel.interrupt()

    reply, messages = kernel.execute(code, on_message=watch)
    assert interrupted_at, ("the run ended before the interrupt", [m["content"] for m in messages])
    # the magic catches the interrupt
    assert reply["content"]["status"] == "ok", (reply["content"], [m["content"] for m in messages])
    return messages[-1]["received"] - interrupted_at[0], messages


def test_interrupt_during_stream(own_kernel: Kernel) -> None:
    kernel = own_kernel
    took, messages = _interrupt_when(
        kernel, "%%agent -m slow_stream\nlong story", lambda html: "word word" in html
    )
    assert took < 1.0, took
    facts = HtmlFacts(last_html(messages))
    assert "stopped: cancelled" in facts.text and "[run cancelled]" in facts.text
    assert 0 < facts.text.count("word") < 3000
    # history valid, next cell works and continues the conversation
    reply, messages = kernel.execute("%%agent -m fast\nadd please")
    assert "Result: 5" in HtmlFacts(last_html(messages)).text
    out = kernel.run(
        "m = nbagent.magic.current_agent().conversation.messages\n"
        "print([x.role for x in m], m[1].stop_reason, m[3].stop_reason)"
    )
    assert out == "['user', 'assistant', 'user', 'assistant'] cancelled complete\n"


def test_interrupt_during_slow_tool(own_kernel: Kernel) -> None:
    kernel = own_kernel
    took, messages = _interrupt_when(
        kernel, "%%agent\nslow tool now", lambda html: "running…" in html
    )
    assert took < 1.0, took
    facts = HtmlFacts(last_html(messages))
    assert "cancelled while running after " in facts.text and "stopped: cancelled" in facts.text
    reply, messages = kernel.execute("%%agent\nadd again")
    assert reply["content"]["status"] == "ok"
    assert "Result: 5" in HtmlFacts(last_html(messages)).text


def test_approval_prompt_through_stdin(kernel: Kernel) -> None:
    reply, messages = kernel.execute(
        "%%agent -m fast\ndelete the file", allow_stdin=True, stdin_answer="y"
    )
    prompts = [m["content"]["prompt"] for m in messages if m["msg_type"] == "input_request"]
    assert prompts == ['nbagent: allow delete(path="/tmp/x")? [y/N, no answer in 120 s: N] ']
    facts = HtmlFacts(last_html(messages))
    assert "approved by user" in facts.text and "Result: deleted /tmp/x" in facts.text


def test_whole_notebook_outputs_land_in_their_cells_and_survive_nbconvert(
    tmp_path: Path,
) -> None:
    nb = notebook(
        SETUP,
        "import pandas as pd\n@nbagent.tool\ndef table(n: int):\n"
        "    '''Rows.'''\n"
        "    return pd.DataFrame({'n': range(n), 'sq': [i * i for i in range(n)]})\n"
        "def script2(request):\n"
        "    if request.round_index == 0:\n"
        "        return reply('<script>alert(1)</script>', [call('table', n=40)])\n"
        "    return 'Done: **40 rows** [x](javascript:alert(1))'\n"
        "%agent model scripted",
        "nbagent.magic.use(ScriptedModel(script2))",
        "%%agent --out tab\nmake a table",
        "print(type(tab.tool_results[0]).__name__, tab.tool_results[0].shape)",
        "%%agent -m fast --new\nadd numbers",
        "print(_agent.output)",
        "%%agent\ndelete the file",
    )
    run_notebook(nb, kernel_environment(tmp_path / "nbagent-home"), tmp_path)
    cells = nb.cells
    table_html = cells[3].outputs[-1]["data"]["text/html"]
    assert len(cells[3].outputs) == 1  # updates replaced the one display in place
    facts = assert_inert(table_html)
    assert "Round 1 · table · ok" in facts.text and "DataFrame: 40 rows × 2 columns" in facts.text
    assert "Done: 40 rows" in facts.text
    assert cells[4].outputs[0]["text"] == "DataFrame (40, 2)\n"
    assert len(cells[5].outputs) == 1 and "Result: 5" in cells[5].outputs[0]["data"]["text/html"]
    assert cells[6].outputs[0]["text"] == "Result: 5\n"
    # headless approval: no stdin, the default policy denies
    denied = HtmlFacts(cells[7].outputs[0]["data"]["text/html"]).text
    assert "denied by policy NBAGENT_APPROVAL=deny (no stdin)" in denied
    # save, reload, convert to HTML: the static panels are still there
    path = tmp_path / "run.ipynb"
    nbformat.write(nb, path)
    reloaded = nbformat.read(path, as_version=4)
    assert reloaded.cells[3].outputs[0]["data"]["text/html"] == table_html
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_notebook_node(reloaded)
    assert body.count('<details class="nba-round">') >= 2 and "first 10 shown" in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body


def test_headless_approval_policy_allow_list(kernel: Kernel) -> None:
    # A run without stdin (as under nbclient or papermill) in a kernel whose environment
    # allows the call: the policy decides.
    kernel.run("import os\nos.environ['NBAGENT_APPROVAL'] = 'allow:delete'")
    try:
        reply, messages = kernel.execute("%%agent -m fast\ndelete the file")
    finally:
        kernel.run("del os.environ['NBAGENT_APPROVAL']")
    assert reply["content"]["status"] == "ok"
    text = HtmlFacts(last_html(messages)).text
    assert "approved by policy NBAGENT_APPROVAL=allow:delete" in text
    assert "Result: deleted /tmp/x" in text


def test_a_policy_set_in_the_notebook_decides_even_where_stdin_could_ask(kernel: Kernel) -> None:
    # JupyterLab allows stdin: the policy the notebook set still answers, nobody is asked.
    kernel.run("import os\nos.environ['NBAGENT_APPROVAL'] = 'allow:delete'")
    try:
        reply, messages = kernel.execute(
            "%%agent -m fast\ndelete the file", allow_stdin=True, stdin_answer="n"
        )
    finally:
        kernel.run("del os.environ['NBAGENT_APPROVAL']")
    assert reply["content"]["status"] == "ok"
    assert "input_request" not in [m["msg_type"] for m in messages]
    text = HtmlFacts(last_html(messages)).text
    assert "approved by policy NBAGENT_APPROVAL=allow:delete" in text
    assert "Result: deleted /tmp/x" in text


def test_a_question_nobody_answers_is_a_denial_after_the_timeout(kernel: Kernel) -> None:
    # After a page reload JupyterLab no longer shows the input box: the kernel must not
    # stay busy. With NBAGENT_APPROVAL_TIMEOUT=1 the question gives up after a second.
    kernel.run("import os\nos.environ['NBAGENT_APPROVAL_TIMEOUT'] = '1'")
    try:
        reply, messages = kernel.execute(
            "%%agent -m fast\ndelete the file", allow_stdin=True, stdin_answer="<no answer>"
        )
    finally:
        kernel.run("del os.environ['NBAGENT_APPROVAL_TIMEOUT']")
    assert reply["content"]["status"] == "ok", reply["content"]
    prompts = [m["content"]["prompt"] for m in messages if m["msg_type"] == "input_request"]
    assert prompts == ['nbagent: allow delete(path="/tmp/x")? [y/N, no answer in 1 s: N] ']
    text = HtmlFacts(last_html(messages)).text
    assert "denied by nobody (no answer in 1 s)" in text
    assert "deleted /tmp/x" not in text and "stopped: cancelled" not in text
    assert "Result: " in text  # the model got the denial and answered
    reply, messages = kernel.execute("%%agent\nadd again")  # the kernel is free
    assert "Result: 5" in HtmlFacts(last_html(messages)).text


def test_interrupt_while_asking_for_approval(own_kernel: Kernel) -> None:
    kernel = own_kernel
    reply, messages = kernel.execute(
        "%%agent\ndelete the file", allow_stdin=True, stdin_answer="<interrupt>"
    )
    assert reply["content"]["status"] == "ok", reply["content"]
    assert [m["msg_type"] for m in messages].count("input_request") == 1
    facts = HtmlFacts(last_html(messages))
    assert "stopped: cancelled" in facts.text
    assert "deleted" not in facts.text
    reply, messages = kernel.execute("%%agent\nadd again")
    assert "Result: 5" in HtmlFacts(last_html(messages)).text
