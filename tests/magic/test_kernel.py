"""%%agent in a real ipykernel, driven through jupyter_client and nbclient."""

from __future__ import annotations

import queue
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import nbformat
import pytest
from html_facts import HtmlFacts, assert_inert
from jupyter_client import KernelManager
from nbclient import NotebookClient

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


class Kernel:
    """A started kernel and a client; ``execute`` returns the reply and the iopub messages."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel(env=env, cwd=str(cwd))
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)

    def execute(
        self,
        code: str,
        *,
        timeout: float = 60,
        allow_stdin: bool = False,
        on_message: Any = None,
        stdin_answer: str | None = None,
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        msg_id = self.kc.execute(code, allow_stdin=allow_stdin)
        messages: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        idle = False
        while not idle:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no idle status after {timeout} s; got {len(messages)} msgs")
            if stdin_answer is not None:
                try:
                    request = self.kc.get_stdin_msg(timeout=0.01)
                except queue.Empty:
                    pass
                else:
                    assert request["msg_type"] == "input_request"
                    messages.append(request)
                    if stdin_answer == "<interrupt>":
                        self.km.interrupt_kernel()  # the user interrupts instead of answering
                    else:
                        self.kc.input(stdin_answer)
            try:
                msg = self.kc.get_iopub_msg(timeout=0.05)
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            msg["received"] = time.monotonic()
            messages.append(msg)
            if on_message is not None:
                on_message(msg)
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                idle = True
        while True:  # skip replies to earlier requests (wait_for_ready's kernel_info)
            reply = self.kc.get_shell_msg(timeout=10)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply, messages

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


@pytest.fixture
def kernel(kernel_env: dict[str, str], tmp_path: Path) -> Iterator[Kernel]:
    k = Kernel(kernel_env, tmp_path)
    reply, messages = k.execute(SETUP)
    assert reply["content"]["status"] == "ok", [m["content"] for m in messages]
    yield k
    k.close()


def displays(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m["msg_type"] in ("display_data", "update_display_data")]


def last_html(messages: list[dict[str, Any]]) -> str:
    return str(displays(messages)[-1]["content"]["data"]["text/html"])


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
    reply, messages = kernel.execute("print(len(_agent.output), _agent.stop_reason)")
    assert [m["content"]["text"] for m in messages if m["msg_type"] == "stream"] == [
        "15000 complete\n"
    ]


def _interrupt_when(kernel: Kernel, code: str, ready: Any) -> tuple[float, list[dict[str, Any]]]:
    """Run ``code``; interrupt the kernel when ``ready(html)``; seconds from interrupt to idle."""
    interrupted_at: list[float] = []

    def watch(msg: dict[str, Any]) -> None:
        data = msg["content"].get("data", {})
        if not interrupted_at and "text/html" in data and ready(data["text/html"]):
            interrupted_at.append(time.monotonic())
            kernel.km.interrupt_kernel()

    reply, messages = kernel.execute(code, on_message=watch)
    assert interrupted_at, ("the run ended before the interrupt", [m["content"] for m in messages])
    # the magic catches the interrupt
    assert reply["content"]["status"] == "ok", (reply["content"], [m["content"] for m in messages])
    return messages[-1]["received"] - interrupted_at[0], messages


def test_interrupt_during_stream(kernel: Kernel) -> None:
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
    reply, messages = kernel.execute(
        "m = nbagent.magic.current_agent().conversation.messages\n"
        "print([x.role for x in m], m[1].stop_reason, m[3].stop_reason)"
    )
    out = [x["content"]["text"] for x in messages if x["msg_type"] == "stream"]
    assert out == ["['user', 'assistant', 'user', 'assistant'] cancelled complete\n"]


def test_interrupt_during_slow_tool(kernel: Kernel) -> None:
    took, messages = _interrupt_when(
        kernel, "%%agent\nslow tool now", lambda html: "running…" in html
    )
    assert took < 1.0, took
    facts = HtmlFacts(last_html(messages))
    assert "not run: the run was cancelled" in facts.text and "stopped: cancelled" in facts.text
    reply, messages = kernel.execute("%%agent\nadd again")
    assert reply["content"]["status"] == "ok"
    assert "Result: 5" in HtmlFacts(last_html(messages)).text


def test_approval_prompt_through_stdin(kernel: Kernel) -> None:
    reply, messages = kernel.execute("%%agent\ndelete the file", allow_stdin=True, stdin_answer="y")
    prompts = [m["content"]["prompt"] for m in messages if m["msg_type"] == "input_request"]
    assert prompts == ['nbagent: allow delete(path="/tmp/x")? [y/N] ']
    facts = HtmlFacts(last_html(messages))
    assert "approved by user" in facts.text and "Result: deleted /tmp/x" in facts.text


def _notebook(*cells: str) -> Any:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    return nb


def _run_notebook(nb: Any, env: dict[str, str], cwd: Path) -> Any:
    km = KernelManager(kernel_name="python3")
    km.start_kernel(env=env, cwd=str(cwd))
    try:
        client = NotebookClient(nb, km=km, timeout=120, allow_errors=False)
        client.execute()
    finally:
        km.shutdown_kernel(now=True)
    return nb


def test_whole_notebook_outputs_land_in_their_cells_and_survive_nbconvert(
    kernel_env: dict[str, str], tmp_path: Path
) -> None:
    nb = _notebook(
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
    _run_notebook(nb, kernel_env, tmp_path)
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


def test_headless_approval_policy_allow_list(kernel_env: dict[str, str], tmp_path: Path) -> None:
    env = dict(kernel_env, NBAGENT_APPROVAL="allow:delete")
    nb = _run_notebook(_notebook(SETUP, "%%agent\ndelete the file"), env, tmp_path)
    text = HtmlFacts(nb.cells[1].outputs[0]["data"]["text/html"]).text
    assert "approved by policy NBAGENT_APPROVAL=allow:delete (no stdin)" in text
    assert "Result: deleted /tmp/x" in text


def test_interrupt_while_asking_for_approval(kernel: Kernel) -> None:
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
