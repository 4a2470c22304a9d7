"""%%agent and %agent in a real IPython InteractiveShell."""

from __future__ import annotations

import io
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from IPython.core.error import UsageError

from nbagent import Conversation, RunResult, tool
from nbagent.magic import current_agent, use
from nbagent.render import result_mime_bundle
from nbagent.testing import ScriptedModel, call, reply
from tests.support.agents import http_agent
from tests.support.html import HtmlFacts, assert_inert
from tests.support.servers import OpenAI, RecordedRequest, Reply, WireServer


def outputs(shell: Any) -> list[dict[str, Any]]:
    return list(shell.display_pub.outputs)


def final_html(shell: Any) -> str:
    return str(outputs(shell)[-1]["data"]["text/html"])


def run(shell: Any, line: str, body: str) -> Any:
    shell.display_pub.outputs.clear()
    return shell.run_cell_magic("agent", line, body)


def two_round_script(request: Any) -> Any:
    if request.round_index == 0:
        return reply("Let me add.", [call("add", a=2, b=3)])
    return reply(f"The sum is **{request.tool_results[-1].content}**.")


@pytest.fixture
def add_tool() -> Any:
    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return add


def test_cell_runs_shows_live_then_final_html_and_sets_agent_var(shell: Any, add_tool: Any) -> None:
    model = ScriptedModel(two_round_script)
    shell.user_ns["model"] = model
    shell.run_line_magic("agent", "model model")
    assert run(shell, "", "What is 2+3?") is None
    result = shell.user_ns["_agent"]
    assert isinstance(result, RunResult)
    assert result.output == "The sum is **5**." and result.stop_reason == "complete"
    assert result.tool_results == [5]
    outs = outputs(shell)
    # one display, then updates of that same display
    assert outs[0]["update"] is False and all(o["update"] for o in outs[1:])
    ids = {o["transient"]["display_id"] for o in outs}
    assert len(ids) == 1
    last = outs[-1]["data"]
    assert last == result_mime_bundle(result)  # the whole HTML and both twins, exactly
    facts = HtmlFacts(last["text/html"])
    assert "Round 1 · add · ok" in facts.text and "The sum is 5." in facts.text
    assert "The sum is **5**." in last["text/plain"]
    assert model.requests[0].prompt == "What is 2+3?"


def test_consecutive_cells_continue_one_conversation_new_starts_over(shell: Any) -> None:
    model = ScriptedModel(lambda r: f"turn {len([m for m in r.messages if m.role == 'user'])}")
    use(model)
    run(shell, "", "first")
    run(shell, "", "second")
    assert shell.user_ns["_agent"].output == "turn 2"
    run(shell, "--new", "third")
    assert shell.user_ns["_agent"].output == "turn 1"
    conversation_id = current_agent().conversation.id
    # switching model keeps the conversation
    other = ScriptedModel(lambda r: f"other sees {len(r.messages)} messages")
    shell.user_ns["other"] = other
    run(shell, "-m other --out answer", "fourth")
    assert shell.user_ns["answer"].output == "other sees 4 messages"
    assert current_agent().conversation.id == conversation_id
    assert [m.content for m in other.requests[0].messages[:2]] == ["third", "turn 1"]


def test_options_reach_the_model(shell: Any, add_tool: Any) -> None:
    @tool
    def sub(a: int, b: int) -> int:
        """Subtract."""
        return a - b

    def mul(a: int, b: int) -> int:
        """Multiply (a plain function from the notebook)."""
        return a * b

    shell.user_ns["mul"] = mul

    def script(request: Any) -> Any:
        return reply("", [call("mul", a=2, b=4)]) if request.round_index < 5 else reply("done")

    model = ScriptedModel(script)
    use(model)
    run(shell, '--tools add,mul --max-rounds 2 --system "Be brief." --no-stream --out r', "go")
    seen = model.requests
    assert seen[0].tools == ["add", "mul"]
    assert seen[0].request.system == "Be brief." and seen[0].request.stream is False
    assert [s.tool_choice for s in seen] == ["auto", "auto", "none"]
    assert shell.user_ns["r"].stop_reason == "max_rounds"
    assert shell.user_ns["r"].tool_results == [8, 8]
    # --tools applied to that cell only; --system stays for the conversation
    run(shell, "", "again")
    assert sorted(seen[-1].tools) == ["add", "sub"]
    assert seen[-1].request.system == "Be brief."


def test_timeout_option_stops_the_run(shell: Any) -> None:
    use(ScriptedModel(["x" * 400], chunk_size=1, delay=0.01))
    run(shell, "--timeout 0.3", "slow")
    result = shell.user_ns["_agent"]
    assert result.stop_reason == "timeout"
    assert "stopped: timeout" in HtmlFacts(final_html(shell)).text


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--bogus", "unrecognized arguments: --bogus"),
        ("--max-rounds x", "invalid int value: 'x'"),
        ("--max-rounds -1", "--max-rounds must be 0 or more."),
        ("--timeout 0", "--timeout must be a positive number"),
        ("--out 1x", "--out '1x' is not a valid variable name."),
        ("--tools nosuch", "no tool or function named 'nosuch'"),
        ("-m nope:model", "Unknown provider 'nope'"),
    ],
)
def test_bad_options_give_short_usage_errors(shell: Any, line: str, message: str) -> None:
    model = ScriptedModel()
    use(model)
    with pytest.raises(UsageError) as info:
        run(shell, line, "hello")
    assert message in str(info.value)
    assert model.requests == [] and current_agent().conversation.messages == []
    # and through run_cell: no traceback, the shell shows IPython's one-line UsageError
    outcome = shell.run_cell(f"%%agent {line}\nhello")
    assert isinstance(outcome.error_in_exec, UsageError)


def test_empty_body_is_a_usage_error(shell: Any) -> None:
    use(ScriptedModel())
    with pytest.raises(UsageError, match="write the prompt in the cell body"):
        run(shell, "", "  \n ")


def test_interpolation_from_user_namespace(shell: Any) -> None:
    model = ScriptedModel()
    use(model)
    shell.user_ns["df"] = pd.DataFrame({"city": [f"c{i}" for i in range(200)], "t": range(200)})
    shell.user_ns["name"] = "Oslo"
    shell.run_cell("class Box:\n    size = 7\nbox = Box()")
    run(shell, "", 'Weather in {name}, size {box.size}, keep {{literal}} and {"json": 1}:\n{df}')
    prompt = model.requests[0].prompt
    assert prompt.startswith('Weather in Oslo, size 7, keep {literal} and {"json": 1}:\n')
    assert "<DataFrame with 200 rows × 2 columns; first 5 rows:>" in prompt
    assert "c4" in prompt and "c5" not in prompt and len(prompt) < 400
    with pytest.raises(UsageError, match="'missing' is not defined"):
        run(shell, "", "about {missing}")
    with pytest.raises(UsageError, match="no attribute 'nope'"):
        run(shell, "", "about {box.nope}")


def test_model_and_tool_xss_is_inert_in_the_cell_output(shell: Any) -> None:
    payload = "<script>alert(1)</script><img src=x onerror=alert(2)><!-- c -->"

    @tool
    def evil(q: str) -> Any:
        """Returns hostile content."""
        return {"html": payload, "frame": None} if q == "json" else pd.DataFrame({payload: [q]})

    def script(request: Any) -> Any:
        if request.round_index == 0:
            return reply(payload, [call("evil", q=payload), call("evil", q="json")])
        return reply(payload + " [x](javascript:alert(3))")

    use(ScriptedModel(script))
    run(shell, "", "go")
    for out in outputs(shell):
        facts = assert_inert(out["data"]["text/html"])
    assert "<script>alert(1)</script>" in facts.text  # shown as text


def test_approval_headless_uses_policy(
    shell: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[str] = []

    @tool(requires_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return "deleted"

    shell.run_line_magic("agent", "tools")
    assert "delete [asks approval]: Delete a file." in capsys.readouterr().out

    def script(request: Any) -> Any:
        if request.round_index == 0:
            return reply("", [call("delete", path="/tmp/x")])
        return reply(request.tool_results[-1].content)

    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # no stdin: input() hits EOF
    monkeypatch.delenv("NBAGENT_APPROVAL", raising=False)
    use(ScriptedModel(script))
    run(shell, "", "delete it")
    result = shell.user_ns["_agent"]
    assert ran == [] and result.rounds[0].results[0].ok is False
    assert "denied by policy NBAGENT_APPROVAL=deny (no stdin)" in final_html(shell)
    assert "The user denied this call" in result.output
    monkeypatch.setenv("NBAGENT_APPROVAL", "allow:delete")
    run(shell, "", "delete it")
    assert ran == ["/tmp/x"]
    # a policy that is set decides without asking, stdin or not
    assert "approved by policy NBAGENT_APPROVAL=allow:delete" in final_html(shell)


@pytest.mark.parametrize(("answer", "approved"), [("y\n", True), ("n\n", False), ("\n", False)])
def test_approval_asks_through_input(
    shell: Any, monkeypatch: pytest.MonkeyPatch, answer: str, approved: bool
) -> None:
    ran: list[str] = []

    @tool(requires_approval=True)
    def launch(target: str) -> str:
        """Launch something."""
        ran.append(target)
        return "launched"

    def script(request: Any) -> Any:
        if request.round_index == 0:
            return reply("", [call("launch", target="moon")])
        return reply("ok")

    monkeypatch.setattr(sys, "stdin", io.StringIO(answer))
    use(ScriptedModel(script))
    run(shell, "", "go")
    assert ran == (["moon"] if approved else [])
    word = "approved" if approved else "denied"
    assert f'nba-approval nba-{"ok" if approved else "err"}">{word} by user</span>' in final_html(
        shell
    )


def _interrupt_after(seconds: float) -> threading.Timer:
    """Deliver a real SIGINT to this process (what a kernel interrupt does)."""
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


def _assert_valid_history(shell: Any) -> None:
    conversation = current_agent().conversation
    copy = Conversation.from_json(conversation.to_json())
    for message in copy.messages:
        for rnd in message.rounds or []:
            assert [r.call_id for r in rnd.results] == [c.id for c in rnd.calls]


@pytest.mark.sigint
def test_interrupt_during_stream_cancels_and_next_cell_works(shell: Any) -> None:
    use(ScriptedModel(["word " * 2000, "next answer"], chunk_size=5, delay=0.01))
    timer = _interrupt_after(0.5)
    started = time.monotonic()
    run(shell, "", "long story")
    elapsed = time.monotonic() - started
    timer.join()
    result = shell.user_ns["_agent"]
    assert result.stop_reason == "cancelled" and elapsed < 0.5 + 1.0
    assert result.output.startswith("word word") and result.output.endswith("[run cancelled]")
    assert "stopped: cancelled" in HtmlFacts(final_html(shell)).text
    _assert_valid_history(shell)
    run(shell, "", "and now?")
    assert shell.user_ns["_agent"].output == "next answer"


@pytest.mark.sigint
def test_interrupt_during_slow_tool(shell: Any) -> None:
    @tool(timeout=30)
    def slow() -> str:
        """Takes long."""
        time.sleep(10)
        return "late"

    def script(request: Any) -> Any:
        if request.prompt == "after":
            return "fine"
        return reply("Calling.", [call("slow")]) if request.round_index == 0 else "unused"

    use(ScriptedModel(script))
    timer = _interrupt_after(0.5)
    started = time.monotonic()
    run(shell, "", "use the slow tool")
    elapsed = time.monotonic() - started
    timer.join()
    result = shell.user_ns["_agent"]
    assert result.stop_reason == "cancelled" and elapsed < 0.5 + 1.0
    facts = HtmlFacts(final_html(shell))
    assert "cancelled while running after " in facts.text and "stopped: cancelled" in facts.text
    _assert_valid_history(shell)
    run(shell, "", "after")
    assert shell.user_ns["_agent"].output == "fine"


def test_live_updates_are_throttled(shell: Any) -> None:
    text = "x" * 1500
    use(ScriptedModel([text], chunk_size=1, delay=0.001))
    started = time.monotonic()
    run(shell, "", "stream")
    elapsed = time.monotonic() - started
    updates = [o for o in outputs(shell) if o["update"]]
    assert len(updates) <= elapsed / 0.1 + 2  # ~10 a second at most, plus the final one
    assert len(updates) >= 2
    assert shell.user_ns["_agent"].output == text


# Terminal IPython (no display updates): tests/magic/test_terminal.py


def test_line_magic_commands(
    shell: Any, add_tool: Any, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    use(ScriptedModel(two_round_script))
    shell.run_line_magic("agent", "tools")
    assert "add: Add two integers." in capsys.readouterr().out
    run(shell, "", "2+3")
    run(shell, "", "2+3 again")
    history = shell.run_line_magic("agent", "history")
    columns = ["turn", "round", "tool", "arguments", "ok", "duration", "tokens"]
    assert list(history.columns) == columns
    assert history[["turn", "round", "tool", "ok"]].values.tolist() == [
        [1, 1, "add", True],
        [2, 2, "add", True],
    ]
    assert json.loads(history["arguments"][0]) == {"a": 2, "b": 3}
    capsys.readouterr()
    shell.run_line_magic("agent", "usage")
    assert capsys.readouterr().out.startswith("2 runs, 2 tool rounds, ")
    shell.run_line_magic("agent", f"export {tmp_path / 'c.json'}")
    saved = Conversation.from_json((tmp_path / "c.json").read_text())
    assert saved.id == current_agent().conversation.id and len(saved.messages) == 4
    shell.run_line_magic("agent", f"export {tmp_path / 'c.md'}")
    assert "The sum is **5**." in (tmp_path / "c.md").read_text()
    with pytest.raises(UsageError, match="must end in .json or .md"):
        shell.run_line_magic("agent", f"export {tmp_path / 'c.txt'}")
    shell.run_line_magic("agent", "model")
    assert capsys.readouterr().out.strip().endswith("model: scripted")
    with pytest.raises(UsageError, match="Unknown provider"):
        shell.run_line_magic("agent", "model bogus:thing")
    shell.run_line_magic("agent", "model scripted:other")
    assert current_agent().model == "scripted:other"
    assert len(current_agent().conversation.messages) == 4  # conversation kept
    shell.run_line_magic("agent", "reset")
    assert current_agent().conversation.messages == []
    capsys.readouterr()
    assert shell.run_line_magic("agent", "history") is None  # a sentence, not bare headers
    assert capsys.readouterr().out == (
        "No tool calls in this conversation yet (0 turns). "
        "%agent history --all lists the stored conversations.\n"
    )
    use(ScriptedModel(["no tools needed"]))
    run(shell, "", "hello")  # a run without tool rounds: still a sentence
    assert shell.run_line_magic("agent", "history") is None
    assert "yet (1 turn)." in capsys.readouterr().out
    with pytest.raises(UsageError, match="unknown command 'frobnicate'"):
        shell.run_line_magic("agent", "frobnicate")
    with pytest.raises(UsageError, match="too many arguments"):
        shell.run_line_magic("agent", "reset now")


def test_history_all_resume_and_unknown_id(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    use(ScriptedModel(lambda r: f"answer to {r.prompt}"))
    run(shell, "", "first question")
    run(shell, "", "second question")
    old_id = current_agent().conversation.id
    shell.run_line_magic("agent", "reset")
    run(shell, "", "unrelated")
    table = shell.run_line_magic("agent", "history --all")
    row = table[table["id"] == old_id].iloc[0]
    assert row["turns"] == 2 and row["title"] == "first question"
    capsys.readouterr()
    shell.run_line_magic("agent", f"resume {old_id[:8]}")
    assert f"Resumed conversation {old_id} (2 turns)" in capsys.readouterr().out
    agent = current_agent()
    assert [m.content for m in agent.conversation.messages] == [
        "first question",
        "answer to first question",
        "second question",
        "answer to second question",
    ]
    # the resumed conversation goes on in the next cell (with the model given to the magic)
    model = ScriptedModel(lambda r: f"{len(r.messages)} messages so far")
    use(model)
    run(shell, "", "third")
    assert shell.user_ns["_agent"].output == "6 messages so far"
    assert current_agent().conversation.id == old_id
    with pytest.raises(UsageError, match="no such conversation"):
        shell.run_line_magic("agent", "resume c_doesnotexist")


@pytest.fixture
def echo_server() -> Iterator[WireServer]:
    """A loopback OpenAI-compatible server answering "Echo: <last message>"."""

    def echo(request: RecordedRequest) -> Reply:
        return OpenAI.text_stream("Echo: " + request.json()["messages"][-1]["content"])

    server = WireServer(responder=echo)
    yield server
    server.close()


def test_record_provider_traffic(shell: Any, tmp_path: Any, echo_server: WireServer) -> None:
    use(ScriptedModel())
    with pytest.raises(UsageError, match="record=/replay= need a model string"):
        shell.run_line_magic("agent", f"record {tmp_path / 'x.jsonl'}")
    use(http_agent("openai:gpt-4o-mini", echo_server, api_key="sk-secret-key-123"))
    path = tmp_path / "run.jsonl"
    shell.run_line_magic("agent", f"record {path}")
    run(shell, "", "hello over the wire")
    assert shell.user_ns["_agent"].output == "Echo: hello over the wire"
    assert echo_server.bodies()[-1]["messages"][-1]["content"] == "hello over the wire"
    recorded = path.read_text()
    assert len(recorded.splitlines()) == 1 and "hello over the wire" in recorded
    assert "sk-secret-key-123" not in recorded
    shell.run_line_magic("agent", "record off")
    run(shell, "", "not recorded")
    assert len(path.read_text().splitlines()) == 1


def test_provider_failure_shows_final_state_and_short_error(shell: Any) -> None:
    from nbagent import ProviderError

    def script(request: Any) -> Any:
        if request.round_index == 0:
            return reply("Looking.", [call("add", a=1, b=1)])
        raise ProviderError("scripted", 503, "overloaded", "try later")

    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    use(ScriptedModel(script))
    with pytest.raises(UsageError, match="the run failed: scripted HTTP 503 overloaded: try later"):
        run(shell, "", "go")
    facts = HtmlFacts(final_html(shell))
    assert "Round 1 · add · ok" in facts.text and "stopped: error" in facts.text
    assert shell.user_ns["_agent"].stop_reason == "error"
    _assert_valid_history(shell)
    use(ScriptedModel(["recovered"]))
    run(shell, "", "again")
    assert shell.user_ns["_agent"].output == "recovered"


def test_model_without_key_is_a_usage_error_and_keeps_the_current_model(
    shell: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = ScriptedModel(["still here"])
    use(model)
    with pytest.raises(UsageError, match="OPENAI_API_KEY"):
        run(shell, "-m openai:gpt-4o-mini", "hi")
    with pytest.raises(UsageError, match="OPENAI_API_KEY"):
        shell.run_line_magic("agent", "model openai:gpt-4o-mini")
    run(shell, "", "hi")
    assert shell.user_ns["_agent"].output == "still here"


def test_repeating_the_same_model_keeps_the_provider(shell: Any) -> None:
    model = ScriptedModel(lambda r: "hi")
    shell.user_ns["model"] = model
    run(shell, "-m model", "one")
    agent = current_agent()
    run(shell, "-m model", "two")
    assert current_agent() is agent and len(model.requests) == 2
    run(shell, "-m scripted:x", "three")
    provider = current_agent().provider
    run(shell, "-m scripted:x", "four")
    assert current_agent().provider is provider
    assert len(current_agent().conversation.messages) == 8
    # a notebook variable that is not a model does not shadow a model string
    shell.user_ns["scripted"] = 42
    run(shell, "-m scripted", "five")
    assert current_agent().model == "scripted"
