"""``%%agent`` in terminal IPython: progress is appended to stdout, never re-printed.

The shell is a real InteractiveShell with the plain ``DisplayPublisher`` terminal
IPython uses (it prints every display, so a re-drawn display would show twice).
"""

from __future__ import annotations

import _thread
import io
import os
import re
import sys
import threading
import time
from typing import Any

import pexpect  # comes with IPython on POSIX; listed in the dev extra
import pytest

from nbagent import tool
from nbagent.magic import use
from nbagent.testing import ScriptedModel, call, reply


class Recorder(io.StringIO):
    """sys.stdout for the cell: keeps every write, so tests can see what showed when."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []
        self.flushes = 0

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)

    def flush(self) -> None:
        self.flushes += 1


@pytest.fixture
def term(shell: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The shell as terminal IPython has it, and a function recording stdout.

    Call ``record()`` inside the test: pytest's own capture replaces sys.stdout
    between fixture setup and the test body.
    """
    from IPython.core.displaypub import DisplayPublisher

    from nbagent.magic import supports_live_updates

    shell.display_pub = DisplayPublisher(shell=shell)
    assert not supports_live_updates(shell)

    def record() -> Recorder:
        out = Recorder()
        monkeypatch.setattr(sys, "stdout", out)
        return out

    return shell, record


def positions(text: str, *parts: str) -> list[int]:
    """Index of each part in ``text``, asserting each occurs exactly once."""
    for part in parts:
        assert text.count(part) == 1, (part, text)
    return [text.index(p) for p in parts]


def test_progress_is_appended_while_the_run_works(term: Any) -> None:
    shell, record = term
    out = record()
    seen_during_tool: list[str] = []

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        time.sleep(0.3)  # the cell's thread has long printed everything before the call
        seen_during_tool.append(out.getvalue())
        return a + b

    def script(request: Any) -> Any:
        if request.round_index == 0:
            return reply("Let me add.", [call("add", a=2, b=3)])
        return reply(f"The sum is **{request.tool_results[-1].content}**.")

    use(ScriptedModel(script, chunk_size=2))
    shell.run_cell_magic("agent", "", "add 2 and 3")
    text = out.getvalue()
    order = positions(
        text,
        "· Analyzing request…",
        "Let me add.",
        "· Using Add…",
        "▸ Round 1 · add · ok · ",
        "· Processing tool results…",
        "The sum is **5**.",
        "— scripted · 1 round · ",
    )
    assert order == sorted(order)
    # While the tool ran, the text and status before it were already on screen...
    assert "Let me add." in seen_during_tool[0] and "· Using Add…" in seen_during_tool[0]
    assert "Round 1" not in seen_during_tool[0] and "—" not in seen_during_tool[0]
    # ...streamed piece by piece (chunk_size=2), each write flushed.
    assert ["Le", "t ", "me", " a", "dd", "."] == [w for w in out.writes if w in "Let me add."][:6]
    assert out.flushes >= len(out.writes)
    assert shell.user_ns["_agent"].output == "The sum is **5**."
    assert text.endswith("s\n") and "\n\n— scripted" in text  # footer after a blank line


def test_answer_is_printed_once(term: Any) -> None:
    shell, record = term
    out = record()
    answer = "streamed " * 50
    use(ScriptedModel([answer], chunk_size=7))
    shell.run_cell_magic("agent", "", "hi")
    text = out.getvalue()
    assert text.count(answer.strip()) == 1 and text.count("— scripted · 0 rounds") == 1
    assert shell.user_ns["_agent"].output == answer


def test_unstreamed_answer_is_printed_once(term: Any) -> None:
    shell, record = term
    out = record()
    use(ScriptedModel(["the whole answer at once"]))
    shell.run_cell_magic("agent", "--no-stream", "hi")
    assert out.getvalue().count("the whole answer at once") == 1
    assert shell.user_ns["_agent"].output == "the whole answer at once"


def test_failed_call_shows_in_the_round_line(term: Any) -> None:
    shell, record = term
    out = record()

    @tool
    def boom() -> str:
        """Always fails."""
        raise ValueError("no")

    def script(request: Any) -> Any:
        return reply("", [call("boom")]) if request.round_index == 0 else "gave up"

    use(ScriptedModel(script))
    shell.run_cell_magic("agent", "", "try")
    text = out.getvalue()
    assert "▸ Round 1 · boom · 1 error · " in text
    positions(text, "gave up")


def test_control_sequences_in_model_and_tool_text_are_neutralised(term: Any) -> None:
    shell, record = term
    out = record()
    evil = "\x1b[2J\x1b]0;pwned\x07clear\rme"

    @tool(name="bad\x1b[31mname")
    def bad() -> str:
        """A tool with a hostile name."""
        return "x"

    def script(request: Any) -> Any:
        if request.round_index == 0:
            return reply(evil, [call("bad\x1b[31mname")])
        return reply(evil)

    use(ScriptedModel(script, chunk_size=1))
    shell.run_cell_magic("agent", "", "go")
    text = out.getvalue()
    assert not any(c in text for c in "\x1b\x07\r")
    assert text.count("\ufffd[2J\ufffd]0;pwned\ufffdclear\ufffdme") == 2  # both rounds, once each
    assert "▸ Round 1 · bad\ufffd[31mname · ok" in text
    assert shell.user_ns["_agent"].output == evil  # only the display is neutralised


@pytest.mark.sigint
def test_ctrl_c_cancels_prints_the_marker_once_and_next_cell_works(term: Any) -> None:
    shell, record = term
    out = record()
    use(ScriptedModel(["word " * 2000, "next answer"], chunk_size=5, delay=0.01))
    timer = threading.Timer(0.5, _thread.interrupt_main)  # what Ctrl-C does in a terminal
    timer.start()
    started = time.monotonic()
    shell.run_cell_magic("agent", "", "long story")
    elapsed = time.monotonic() - started
    timer.join()
    result = shell.user_ns["_agent"]
    assert result.stop_reason == "cancelled" and elapsed < 0.5 + 1.0
    text = out.getvalue()
    assert text.count("[run cancelled]") == 1 and text.count("stopped: cancelled") == 1
    streamed = result.output.removesuffix("[run cancelled]").strip()
    assert streamed.startswith("word word") and text.count(streamed) == 1
    order = positions(text, "· Formulating response…", "[run cancelled]", "— scripted · 0 rounds")
    assert order == sorted(order)
    out.seek(0)
    out.truncate()
    shell.run_cell_magic("agent", "", "and now?")
    assert shell.user_ns["_agent"].output == "next answer"
    assert out.getvalue().count("next answer") == 1 and "cancelled" not in out.getvalue()


def test_approval_question_gets_its_own_line(term: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    shell, record = term
    out = record()
    ran: list[str] = []

    @tool(requires_approval=True)
    def launch(target: str) -> str:
        """Launch something."""
        ran.append(target)
        return "launched"

    def script(request: Any) -> Any:
        if request.round_index == 0:
            return reply("Launching", [call("launch", target="moon")])
        return reply("done")

    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    use(ScriptedModel(script))
    shell.run_cell_magic("agent", "", "go")
    assert ran == ["moon"]
    text = out.getvalue()
    assert '\nnbagent: allow launch(target="moon")? [y/N, no answer in 120 s: N] ' in text
    order = positions(text, "Launching", "nbagent: allow", "▸ Round 1 · launch · ok", "done")
    assert order == sorted(order)


_STARTUP = '''
import time
from nbagent import tool
from nbagent.magic import use
from nbagent.testing import ScriptedModel, call, reply

@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    time.sleep(0.5)
    return f"Sunny in {city}"

def script(request):
    if request.prompt.startswith("long"):
        return "word " * 3000
    if request.round_index == 0:
        return reply("Let me check.", [call("get_weather", city="Oslo")])
    return reply(f"It is \\x1b[31mred: {request.tool_results[-1].content}.")

get_ipython().run_line_magic("load_ext", "nbagent")
use(ScriptedModel(script, chunk_size=4, delay=0.05))
'''


@pytest.mark.sigint
def test_real_terminal_ipython_in_a_pty(tmp_path: Any) -> None:
    """The real ``ipython`` program (prompt_toolkit, plain DisplayPublisher) in a pty."""
    startup = tmp_path / "startup.py"
    startup.write_text(_STARTUP)
    env = dict(os.environ, IPYTHONDIR=str(tmp_path / "ipython"), TERM="xterm")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "IPython", "--no-banner", "--colors=NoColor", "-i", str(startup)],
        env=env,
        encoding="utf-8",
        dimensions=(40, 200),
        timeout=60,
    )
    try:
        child.expect(r"In \[\d+\]:")
        child.send("%%agent\rweather in Oslo?")
        child.send("\x1b\r")  # Esc, Enter: run the cell
        # While the tool sleeps, the text and status before it are already on screen.
        child.expect(r"Using Get Weather \(Oslo\)…")
        before_tool = child.before
        child.expect("▸ Round 1 · get_weather · ok · ")
        child.expect(r"In \[\d+\]:")
        cell = before_tool + "Using Get Weather (Oslo)…" + child.before
        plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", cell)  # prompt_toolkit's own codes
        order = positions(plain, "Analyzing request…", "Let me check.", "It is ", "— scripted")
        assert order == sorted(order)
        assert "\ufffd[31mred: Sunny in Oslo." in plain and "\x1b[31mred" not in cell
        child.send("%%agent\rlong story")
        child.send("\x1b\r")
        child.expect("word word word")
        child.sendintr()  # Ctrl-C
        child.expect(r"In \[\d+\]:")
        assert child.before.count("[run cancelled]") == 1 and "stopped: cancelled" in child.before
        child.send("print('RESULT', _agent.stop_reason)\r")
        child.expect(r"RESULT (\w+)")
        assert child.match.group(1) == "cancelled"
        child.send("exit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
