"""ChatWidget driven through its Python methods and the front end's messages on a real
asyncio loop.

The widget is a real anywidget (without a front end its messages go nowhere); what
the page would send (``{"kind": "submit", ...}``) is delivered through the same
handler the comm calls; the agent runs the real loop against ScriptedModel.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from nbagent import Agent, tool
from nbagent.chat import ChatWidget
from nbagent.chat.cards import cards_html
from nbagent.render import render_result_html
from nbagent.testing import ScriptedModel, call, reply


def transcript_html(chat: ChatWidget) -> str:
    return chat.transcript_html


def from_page(chat: ChatWidget, **message: object) -> None:
    """What a key or button in the page sends, delivered as the comm delivers it."""
    chat._handle_custom_msg(message, [])


def sent_to_page(chat: ChatWidget) -> list[dict]:
    """Capture the custom messages the widget sends to the page."""
    sent: list[dict] = []
    chat.send = lambda content, buffers=None: sent.append(content)
    return sent


def make_weather_agent(**model_options: object) -> tuple[Agent, ScriptedModel]:
    @tool(register=False)
    def weather(city: str) -> dict:
        """Current weather for a city."""
        return {"city": city, "temp_c": 21}

    def script(request):
        if not request.tool_results:
            return reply("Let me check.", calls=[call("weather", city="Paris")])
        return reply(f"It is {request.tool_results[-1].content} in **Paris**.")

    model = ScriptedModel(script, **model_options)
    return Agent(model, tools=[weather]), model


async def test_submit_shows_round_panels_and_answer() -> None:
    agent, model = make_weather_agent()
    chat = ChatWidget(agent)
    assert chat.status == "Ready"

    task = chat.submit("Weather in Paris?")
    assert task is not None
    assert chat.busy and chat.live["prompt"] == "Weather in Paris?"
    result = await asyncio.wait_for(task, 5)

    assert result is not None and result.stop_reason == "complete"
    html = transcript_html(chat)
    assert "Weather in Paris?" in html
    assert '<details class="nba-round' in html  # the same round panel as %%agent
    assert "weather" in html and "temp_c" in html
    assert "<strong>Paris</strong>" in html  # the answer rendered from Markdown
    assert chat.status == "Ready"
    assert not chat.busy and chat.live == {}
    assert chat.last_result is result
    # The whole turn: the user's message, the tool cards, then exactly the static
    # rendering of the run.
    assert chat.turns[0]["prompt"] == "Weather in Paris?"
    assert chat.turns[0]["html"] == (
        '<div class="nbagent-turn"><div class="nbagent-user">'
        '<div class="nbagent-user-label">You</div>Weather in Paris?</div>'
        f"{cards_html(result.rounds)}{render_result_html(result)}</div>"
    )
    assert 'data-state="done"' in cards_html(result.rounds)
    assert [m.role for m in agent.conversation.messages] == ["user", "assistant"]
    assert model.requests[0].prompt == "Weather in Paris?"


async def test_second_message_continues_the_conversation() -> None:
    model = ScriptedModel(lambda r: f"Seen {len(r.messages)} messages")
    chat = ChatWidget(Agent(model, tools=[]))
    await chat.submit("one")
    await chat.submit("two")
    assert [m.content for m in model.requests[1].messages[:2]] == ["one", "Seen 2 messages"]
    assert len(chat.turns) == 2
    assert "Seen 4 messages" in chat.turns[1]["html"]


async def test_agent_options_build_an_agent() -> None:
    model = ScriptedModel(["hello from options"])
    chat = ChatWidget(model=model, tools=[], system="Be brief.")
    assert chat.agent.system == "Be brief."
    await chat.submit("hi")
    assert "hello from options" in transcript_html(chat)
    assert model.requests[0].request.system == "Be brief."


async def test_bad_arguments_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="send_on"):
        ChatWidget(Agent(ScriptedModel()), send_on="tab")
    with pytest.raises(TypeError, match="not both"):
        ChatWidget(Agent(ScriptedModel()), model="scripted")
    chat = ChatWidget(Agent(ScriptedModel(), tools=[]))
    assert chat.submit("   ") is None  # blank: nothing happens, like Send on an empty box
    assert chat.turns == [] and chat.live == {}


def test_submit_without_an_event_loop_says_what_to_do() -> None:
    chat = ChatWidget(Agent(ScriptedModel(), tools=[]))
    with pytest.raises(RuntimeError, match="running event loop"):
        chat.submit("hi")
    assert chat.turns == [] and chat.live == {} and not chat.busy


async def test_model_and_tool_text_is_escaped() -> None:
    @tool(register=False)
    def fetch() -> str:
        """Fetch a page."""
        return '<img src=x onerror="window.pwned=1"><!-- c -->'

    def script(request):
        if not request.tool_results:
            return reply("<script>window.pwned=2</script>", calls=[call("fetch")])
        return reply('[x](javascript:alert(1)) <b onclick="x()">hi</b>')

    chat = ChatWidget(Agent(ScriptedModel(script), tools=[fetch]))
    await chat.submit("<script>window.pwned=3</script>")
    html = transcript_html(chat)
    for raw in ("<script>", "<img src=x", "<!-- c -->", 'href="javascript:', "<b onclick"):
        assert raw not in html
    assert "&lt;script&gt;window.pwned=3&lt;/script&gt;" in html  # the user's own text too


async def test_stop_mid_stream_cancels_within_a_second(wait_until) -> None:
    long_text = "word " * 2000  # 10,000 characters at 8 per 50 ms: over a minute
    model = ScriptedModel([long_text, "second answer"], delay=0.05)
    agent = Agent(model, tools=[])
    chat = ChatWidget(agent)
    task = chat.submit("talk a lot")
    assert task is not None
    await wait_until(lambda: "word word" in transcript_html(chat))

    started = time.monotonic()
    chat.stop()
    result = await asyncio.wait_for(task, 1.0)
    elapsed = time.monotonic() - started

    assert elapsed < 1.0
    assert result is not None and result.stop_reason == "cancelled"
    html = transcript_html(chat)
    assert "word word" in html and "cancelled" in html
    assert chat.status == "Stopped: cancelled"
    assert not chat.busy
    # History stays valid and the next message works.
    assert [m.role for m in agent.conversation.messages] == ["user", "assistant"]
    assert agent.conversation.messages[1].content.startswith("word word")
    second = await asyncio.wait_for(chat.submit("and now?"), 5)
    assert second is not None and second.output == "second answer"
    assert model.requests[1].messages[1].stop_reason == "cancelled"


async def test_stop_button_during_a_slow_tool(wait_until) -> None:
    @tool(register=False)
    async def slow() -> str:
        """Takes forever."""
        await asyncio.sleep(60)
        return "never"

    model = ScriptedModel([reply(calls=[call("slow")]), "after stop"])
    agent = Agent(model, tools=[slow])
    chat = ChatWidget(agent)
    task = chat.submit("go")
    assert task is not None
    await wait_until(lambda: chat.status.startswith("Using Slow"))

    started = time.monotonic()
    from_page(chat, kind="stop")  # the Stop button
    result = await asyncio.wait_for(task, 1.0)
    assert time.monotonic() - started < 1.0
    assert result is not None and result.stop_reason == "cancelled"
    call_result = result.rounds[0].results[0]
    assert not call_result.ok and "cancelled" in call_result.content
    assert "cancelled" in transcript_html(chat)
    assert (await chat.submit("again")).output == "after stop"


async def test_stop_before_the_run_starts() -> None:
    model = ScriptedModel(["works"], delay=0.01)
    chat = ChatWidget(Agent(model, tools=[]))
    task = chat.submit("hi")
    chat.stop()  # the task has not run a single step yet
    result = await asyncio.wait_for(task, 1.0)
    assert result is not None and result.stop_reason == "cancelled"
    assert model.requests == []  # the model was never asked
    assert (await chat.submit("again")).output == "works"


def approval_agent() -> tuple[Agent, ScriptedModel, list[str]]:
    deleted: list[str] = []

    @tool(register=False, requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return f"deleted {path}"

    def script(request):
        if not request.tool_results:
            return reply(calls=[call("delete_file", path="/tmp/<x>.txt")])
        last = request.tool_results[-1]
        return reply(("OK: " if last.ok else "REFUSED: ") + last.content)

    model = ScriptedModel(script)
    return Agent(model, tools=[delete_file]), model, deleted


async def test_approve_lets_the_call_run(wait_until) -> None:
    agent, model, deleted = approval_agent()
    chat = ChatWidget(agent)
    task = chat.submit("delete it")
    assert task is not None
    await wait_until(lambda: bool(chat.pending_approvals))

    (pending,) = chat.pending_approvals
    assert pending.name == "delete_file" and deleted == []
    (row,) = chat.approvals
    # Plain text: the page sets it as textContent.
    assert row == {
        "id": pending.id,
        "tool": "delete_file",
        "question": 'Allow delete_file(path="/tmp/<x>.txt")?',
        "code_html": "",
    }
    assert chat.status == "Waiting for approval: delete_file"
    # A button used meanwhile answers for itself; the question stays in the status line.
    assert "cannot add cells" in chat.insert_cell("x = 1")
    assert chat.status == "Waiting for approval: delete_file"

    chat.approve(pending.id)
    result = await asyncio.wait_for(task, 5)
    assert deleted == ["/tmp/<x>.txt"]
    assert result.output == "OK: deleted /tmp/<x>.txt"
    assert result.rounds[0].results[0].approval == "approved by user"
    assert chat.approvals == []
    assert "approved by user" in transcript_html(chat)


async def test_deny_button_gives_the_model_an_error(wait_until) -> None:
    agent, model, deleted = approval_agent()
    chat = ChatWidget(agent)
    task = chat.submit("delete it")
    assert task is not None
    await wait_until(lambda: bool(chat.approvals))

    from_page(chat, kind="deny", id=chat.approvals[0]["id"])  # the Deny button
    result = await asyncio.wait_for(task, 5)
    assert deleted == []
    assert result.output.startswith("REFUSED: Error: The user denied this call")
    assert result.rounds[0].results[0].approval == "denied by user"
    assert "denied by user" in transcript_html(chat)
    with pytest.raises(KeyError, match="no call"):
        chat.approve(result.rounds[0].calls[0].id)  # already decided


async def test_stop_while_waiting_for_approval(wait_until) -> None:
    agent, model, deleted = approval_agent()
    chat = ChatWidget(agent)
    task = chat.submit("delete it")
    assert task is not None
    await wait_until(lambda: bool(chat.pending_approvals))
    chat.stop()
    result = await asyncio.wait_for(task, 1.0)
    assert result.stop_reason == "cancelled" and deleted == []
    assert chat.approvals == [] and chat.pending_approvals == []
    assert not result.rounds[0].results[0].ok


async def test_new_chat_resets_everything(wait_until) -> None:
    model = ScriptedModel(lambda r: f"{len(r.messages)} messages:" + " x" * 200, delay=0.02)
    agent = Agent(model, tools=[])
    chat = ChatWidget(agent)
    await chat.submit("first")
    task = chat.submit("second")
    assert task is not None
    await wait_until(lambda: "4 messages" in transcript_html(chat))

    from_page(chat, kind="new_chat")  # mid-stream: stops and clears
    assert chat.turns == [] and chat.live == {} and chat.last_result is None
    assert agent.conversation.messages == []
    assert chat.status == "New chat" and not chat.busy
    cancelled = await asyncio.wait_for(task, 1.0)  # the old run ends, cancelled
    assert cancelled is not None and cancelled.stop_reason == "cancelled"
    # ... without writing into the new chat.
    assert chat.turns == [] and chat.live == {} and chat.last_result is None
    assert chat.status == "New chat"

    result = await asyncio.wait_for(chat.submit("fresh"), 30)
    assert result.output.startswith("2 messages:")
    assert len(chat.turns) == 1
    assert "second" not in transcript_html(chat)


async def test_submit_while_busy_is_refused(wait_until) -> None:
    model = ScriptedModel(["a " * 200], delay=0.01)
    chat = ChatWidget(Agent(model, tools=[]))
    task = chat.submit("one")
    await wait_until(lambda: "a a" in transcript_html(chat))
    with pytest.raises(RuntimeError, match="still answering"):
        chat.submit("two")
    # The send key while busy gives the text back to the box.
    sent = sent_to_page(chat)
    from_page(chat, kind="submit", text="two")
    assert sent == [{"kind": "restore", "text": "two"}]
    assert chat.status == "Still answering: press Stop first"
    chat.stop()
    await task
    assert len(model.requests) == 1


async def test_enter_and_send_in_the_page_submit_the_text() -> None:
    model = ScriptedModel(lambda r: f"echo {r.prompt!r}")
    chat = ChatWidget(Agent(model, tools=[]))
    sent = sent_to_page(chat)
    # What the front end sends on Enter (or Send): the text area's content.
    from_page(chat, kind="submit", text="line one\nline two")
    assert chat.task is not None
    await chat.task
    assert model.requests[0].prompt == "line one\nline two"
    assert "<p>echo 'by button'</p>" not in transcript_html(chat)
    from_page(chat, kind="submit", text="by button")
    await chat.task
    assert model.requests[1].prompt == "by button"
    assert "<p>echo 'by button'</p>" in transcript_html(chat)
    assert sent == []  # nothing given back: both were sent
    from_page(chat, kind="approve", id="nope")  # a stale click does nothing
    from_page(chat, kind="unknown")


async def test_undefined_field_gives_the_text_back() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    InteractiveShell.clear_instance()
    InteractiveShell.instance()
    try:
        model = ScriptedModel(["never"])
        chat = ChatWidget(Agent(model, tools=[], store=None))
        sent = sent_to_page(chat)
        from_page(chat, kind="submit", text="Look at {nothing_here}")
        assert sent == [{"kind": "restore", "text": "Look at {nothing_here}"}]
        assert "'nothing_here' is not defined" in chat.status
        assert model.requests == []
    finally:
        InteractiveShell.clear_instance()


async def test_send_on_and_front_end_files() -> None:
    shift = ChatWidget(Agent(ScriptedModel()), send_on="shift-enter")
    assert shift.send_on == "shift-enter"
    state = shift.get_state()
    assert state["send_on"] == "shift-enter" and state["status"] == "Ready"
    # The ES module and the stylesheet ship with the package and reach the page.
    assert "export default" in state["_esm"] and "nbagent-chat-textarea" in state["_esm"]
    assert "--jp-layout-color" in state["_css"]


async def test_transcript_updates_are_throttled() -> None:
    model = ScriptedModel(["y" * 3000], chunk_size=3, delay=0.001)  # 1000 chunks
    chat = ChatWidget(Agent(model, tools=[]))
    task = chat.submit("stream")
    assert task is not None
    updates = []
    chat.observe(lambda change: updates.append(time.monotonic()), names="live")
    started = time.monotonic()
    await asyncio.wait_for(task, 30)
    elapsed = time.monotonic() - started

    assert "y" * 3000 in chat.turns[0]["html"]
    # At most one update per 100 ms plus the structural ones (start, finish).
    assert len(updates) <= elapsed / 0.1 + 4, (len(updates), elapsed)
    assert len(updates) < 1000 / 5


async def test_provider_error_is_shown_and_the_widget_stays_usable() -> None:
    answers = iter([RuntimeError("the model server fell over"), "fine now"])

    def script(request):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    chat = ChatWidget(Agent(ScriptedModel(script), tools=[]))
    result = await chat.submit("hi")
    assert chat.status == "Error"
    assert "RuntimeError: the model server fell over" in transcript_html(chat)
    assert result is not None and result.stop_reason == "error"
    assert (await chat.submit("again")).output == "fine now"


async def test_always_allow_is_remembered_for_the_conversation_and_revocable(wait_until) -> None:
    agent, model, deleted = approval_agent()
    chat = ChatWidget(agent)
    task = chat.submit("delete it")
    await wait_until(lambda: bool(chat.approvals))
    from_page(chat, kind="always_allow", id=chat.approvals[0]["id"])  # the button
    result = await asyncio.wait_for(task, 5)
    assert result.rounds[0].results[0].approval == "approved by user"
    assert chat.always_allowed == ["delete_file"]

    # The next turn of this conversation runs the tool without asking.
    result = await asyncio.wait_for(chat.submit("delete it again"), 5)
    assert result.rounds[0].results[0].approval == "approved by user (always allowed in this chat)"
    assert len(deleted) == 2

    # Revoked (the chip's button): the tool is asked about again.
    from_page(chat, kind="revoke", tool="delete_file")
    assert chat.always_allowed == []
    task = chat.submit("delete it once more")
    await wait_until(lambda: bool(chat.approvals))
    from_page(chat, kind="always_allow", id=chat.approvals[0]["id"])
    await asyncio.wait_for(task, 5)
    assert len(deleted) == 3 and chat.always_allowed == ["delete_file"]

    # Remembered per conversation: a new chat starts with none.
    chat.new_chat()
    assert chat.always_allowed == []
    task = chat.submit("delete it")
    await wait_until(lambda: bool(chat.approvals))
    chat.deny(chat.approvals[0]["id"])
    await asyncio.wait_for(task, 5)
    assert len(deleted) == 3
