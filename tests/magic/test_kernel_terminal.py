"""``%%agent --kernel`` in terminal IPython: run_python's code is printed in colour before
the y/N question, and runs in the shell's namespace only after "y"."""

from __future__ import annotations

import io
import sys
from typing import Any

import pytest

from nbagent import Agent
from nbagent.magic import use
from nbagent.testing import ScriptedModel, call, reply

CODE = "doubled = [n * 2 for n in numbers]\ndoubled"


@pytest.mark.parametrize(("answer", "ran"), [("y\n", True), ("n\n", False)])
def test_code_is_printed_before_the_question(
    shell: Any, monkeypatch: pytest.MonkeyPatch, answer: str, ran: bool
) -> None:
    from IPython.core.displaypub import DisplayPublisher

    shell.display_pub = DisplayPublisher(shell=shell)  # terminal IPython's publisher
    shell.user_ns["numbers"] = [1, 2, 3]

    def script(request: Any) -> Any:
        if request.round_index == 0:
            return reply("", [call("run_python", code=CODE)])
        return reply(request.tool_results[-1].content)

    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stdin", io.StringIO(answer))
    use(Agent(ScriptedModel(script), tools=[], store=None), shell=shell)
    shell.run_cell_magic("agent", "--kernel", "double them")
    text = out.getvalue()
    question = text.index("nbagent: allow run_python(")
    code_at = text.index("doubled")
    assert code_at < question
    assert "\x1b[" in text[code_at - 20 : question]  # coloured by pygments
    assert ("doubled" in shell.user_ns) is ran
    if ran:
        assert shell.user_ns["doubled"] == [2, 4, 6] and "value:\n[2, 4, 6]" in text
    else:
        assert "denied by user" in text


def test_escape_sequences_in_the_code_are_neutralised(
    shell: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from IPython.core.displaypub import DisplayPublisher

    shell.display_pub = DisplayPublisher(shell=shell)

    def script(request: Any) -> Any:
        if request.round_index == 0:
            return reply("", [call("run_python", code="x = 1  # \x1b]0;pwned\x07\x1b[2J")])
        return reply("ok")

    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stdin", io.StringIO("n\n"))
    use(Agent(ScriptedModel(script), tools=[], store=None), shell=shell)
    shell.run_cell_magic("agent", "--kernel", "go")
    text = out.getvalue()
    assert "\x1b]0;" not in text and "\x1b[2J" not in text and "\x07" not in text
