"""The history file as a user sees it: rows after reopening, resume, export, listing."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import nbagent
from nbagent import Agent, ConfigError, tool
from nbagent.events import RunStarted, ToolCallStarted
from nbagent.messages import ToolCall
from nbagent.providers.base import (
    Finished,
    ModelRequest,
    ProviderEvent,
    TextChunk,
    ToolCallReady,
)
from nbagent.store import INTERRUPTED_NOTE, SCHEMA_VERSION, HistoryWarning, Store
from nbagent.testing import ScriptedModel, ScriptedRequest, call, reply
from tests.support.agents import http_agent
from tests.support.history import query
from tests.support.servers import OpenAI, Reply, WireServer


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def fail(reason: str) -> str:
    """Always fails."""
    raise ValueError(f"cannot do it: {reason}")


def two_rounds(request: ScriptedRequest) -> Any:
    """Round 1 adds 2+3, round 2 adds 5+4, then answers."""
    if request.round_index == 0:
        return reply("Adding first.", calls=[call("add", a=2, b=3)])
    if request.round_index == 1:
        return reply(calls=[call("add", a=5, b=4)])
    return reply(f"The total is {request.tool_results[-1].content}.")


def plain(conversation: nbagent.Conversation) -> dict[str, Any]:
    return conversation.to_dict()


def test_run_is_stored_and_reloads_identically(history_db: Path) -> None:
    agent = Agent(ScriptedModel(two_rounds), tools=[add], system="Be brief.")
    first = agent.run_sync("Add 2 and 3, then add 4.")
    agent.run_sync("Thanks!")  # a second run continues the conversation
    assert first.output == "The total is 9."

    store = Store(history_db)  # a fresh connection, as after a kernel restart
    loaded = store.load(agent.conversation.id)
    assert plain(loaded) == plain(agent.conversation)
    assert loaded.system == "Be brief."
    assert [m.role for m in loaded.messages] == ["user", "assistant", "user", "assistant"]
    assert [len(m.rounds or []) for m in loaded.messages if m.role == "assistant"] == [2, 2]

    rows = query(
        history_db,
        "SELECT r.position, r.assistant_text, t.name, t.arguments, s.ok, s.content, "
        "s.value_type, s.preview FROM rounds r JOIN tool_calls t ON t.round_id = r.id "
        "JOIN tool_results s ON s.tool_call_id = t.id JOIN messages m ON r.message_id = m.id "
        "WHERE m.position = 1 ORDER BY r.id",
    )
    assert rows == [
        (0, "Adding first.", "add", '{"a": 2, "b": 3}', 1, "5", "int", "5"),
        (1, None, "add", '{"a": 5, "b": 4}', 1, "9", "int", "9"),
    ]
    (stop_reason, tokens_in, tokens_out, duration), *_ = query(
        history_db,
        "SELECT stop_reason, input_tokens, output_tokens, duration_s FROM messages "
        "WHERE role = 'assistant' ORDER BY position",
    )
    assert stop_reason == "complete"
    assert (tokens_in, tokens_out) == (first.usage.input_tokens, first.usage.output_tokens)
    assert duration > 0
    assert query(history_db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert query(history_db, "PRAGMA journal_mode") == [("wal",)]


class SignedModel:
    """A provider whose turns carry opaque data to echo back (signatures, thinking)."""

    name = "signed"
    model = "v1"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        if not request.messages[-1].rounds:
            signed = ToolCall(
                "c1", "add", {"a": 1, "b": 2}, '{"a": 1, "b": 2}', {"thoughtSignature": "c2ln"}
            )
            yield ToolCallReady(signed)
            yield Finished("tool_use", {"thinking": [{"signature": "abc", "text": "hmm"}]})
        else:
            yield TextChunk("3")
            yield Finished("end_turn", {"final_signature": "xyz"})

    async def aclose(self) -> None:
        return None


def test_provider_data_and_raw_arguments_survive_a_reload(history_db: Path) -> None:
    agent = Agent(SignedModel(), tools=[add])
    agent.run_sync("1 + 2?")
    loaded = Store(history_db).load(agent.conversation.id)
    assert plain(loaded) == plain(agent.conversation)
    answer = loaded.messages[1]
    assert answer.provider_data == {"final_signature": "xyz"}
    assert answer.rounds is not None
    assert answer.rounds[0].provider_data == {"thinking": [{"signature": "abc", "text": "hmm"}]}
    assert answer.rounds[0].calls[0].provider_data == {"thoughtSignature": "c2ln"}
    assert answer.rounds[0].calls[0].raw_arguments == '{"a": 1, "b": 2}'
    assert answer.model == "signed:v1"


def test_price_and_cached_tokens_survive_a_reload(history_db: Path) -> None:
    """A reopened run keeps every part of its usage: cache and reasoning tokens, the price."""
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 300,
        "prompt_tokens_details": {"cached_tokens": 800},
        "completion_tokens_details": {"reasoning_tokens": 200},
    }
    server = WireServer()
    server.add(
        Reply(200, {**OpenAI.completion(None, [("c1", "add", '{"a": 1, "b": 2}')]), "usage": usage})
    )
    server.add(Reply(200, {**OpenAI.completion("3"), "usage": usage}))
    try:
        agent = http_agent("openai:gpt-4o-mini", server, stream=False, tools=[add])
        result = agent.run_sync("1 + 2?")
    finally:
        server.close()
    assert result.usage.cost is not None and result.usage.cost > 0

    answer = Store(history_db).load(agent.conversation.id).messages[1]  # as after a restart
    assert answer.usage is not None and answer.rounds is not None
    for loaded, live in (
        (answer.usage, result.usage),
        (answer.rounds[0].usage, result.rounds[0].usage),
    ):
        assert (loaded.cache_read_tokens, loaded.reasoning_tokens) == (
            live.cache_read_tokens,
            live.reasoning_tokens,
        )
        assert loaded.cost == pytest.approx(live.cost)
    assert answer.usage.cache_read_tokens == 1600
    assert answer.rounds[0].usage.cache_read_tokens == 800


def test_each_round_is_saved_before_the_next_model_request(history_db: Path) -> None:
    seen: list[int] = []

    def script(request: ScriptedRequest) -> Any:
        # What another process would find in the file at the moment of this request.
        seen.append(
            query(history_db, "SELECT count(*) FROM rounds")[0][0] if history_db.exists() else -1
        )
        if request.round_index < 3:
            return reply(calls=[call("add", a=request.round_index, b=1)])
        return reply("done")

    Agent(ScriptedModel(script), tools=[add]).run_sync("count")
    assert seen == [0, 1, 2, 3]


@pytest.mark.parametrize("consumer", ["async", "stream_sync"])
def test_history_keeps_up_with_the_model_however_slow_the_consumer(
    history_db: Path, consumer: str
) -> None:
    """History is written from the run's events, yet never lags behind the model requests.

    Even a consumer that takes its time over every event finds, at each request, the
    prompt saved and every earlier round too; the answer stays unfinished until the end.
    """
    seen: list[tuple[list[tuple[str, int]], int]] = []

    def script(request: ScriptedRequest) -> Any:
        # What another process would find in the file at the moment of this request.
        messages = "SELECT role, finished_at IS NOT NULL FROM messages ORDER BY position"
        rounds = query(history_db, "SELECT count(*) FROM rounds")[0][0]
        seen.append((query(history_db, messages), rounds))
        if request.round_index < 2:
            return reply(calls=[call("add", a=request.round_index, b=1)])
        return reply("done")

    agent = Agent(ScriptedModel(script), tools=[add])
    if consumer == "async":

        async def take_it_slowly() -> None:
            async for _ in agent.stream("count"):
                await asyncio.sleep(0.01)

        asyncio.run(take_it_slowly())
    else:
        for _ in agent.stream_sync("count"):
            time.sleep(0.01)
    started = [("user", 1), ("assistant", 0)]  # the answer is not finished yet
    assert seen == [(started, 0), (started, 1), (started, 2)]
    assert query(history_db, "SELECT stop_reason FROM messages WHERE role = 'assistant'") == [
        ("complete",)
    ]


def test_failed_tool_keeps_error_traceback_and_duration(history_db: Path) -> None:
    def script(request: ScriptedRequest) -> Any:
        if request.round_index == 0:
            return reply(calls=[call("fail", reason="no data")])
        return reply("It failed.")

    Agent(ScriptedModel(script), tools=[fail]).run_sync("try")
    ok, content, error, traceback, duration = query(
        history_db, "SELECT ok, content, error, traceback, duration_s FROM tool_results"
    )[0]
    assert ok == 0
    assert "cannot do it: no data" in error and "cannot do it: no data" in content
    assert "ValueError" in traceback
    assert duration >= 0


def test_dataframe_result_keeps_a_bounded_preview(history_db: Path) -> None:
    import pandas as pd

    @tool
    def table() -> pd.DataFrame:
        """A big table."""
        return pd.DataFrame({"n": range(10_000), "name": [f"row {i}" for i in range(10_000)]})

    @tool
    def long_text() -> str:
        """Lots of text."""
        return "x" * 100_000

    def script(request: ScriptedRequest) -> Any:
        if request.round_index == 0:
            return reply(calls=[call("table"), call("long_text")])
        return reply("ok")

    Agent(ScriptedModel(script), tools=[table, long_text]).run_sync("go")
    (frame_type, frame_preview), (text_type, text_preview) = query(
        history_db, "SELECT value_type, preview FROM tool_results ORDER BY tool_call_id"
    )
    assert frame_type.startswith("pandas.") and frame_type.endswith("DataFrame")
    preview = json.loads(frame_preview)
    assert preview["shape"] == [10_000, 2]
    assert preview["columns"] == ["n", "name"]
    assert preview["head"][:2] == [[0, "row 0"], [1, "row 1"]]
    assert len(preview["head"]) == 5
    assert text_type == "str"
    assert len(text_preview) <= 4100


def test_cancelled_run_is_stored_with_valid_history(history_db: Path) -> None:
    @tool
    async def slow() -> str:
        """Takes long."""
        await asyncio.sleep(30)
        return "late"

    agent = Agent(ScriptedModel([reply(calls=[call("slow")]), reply("never")]), tools=[slow])

    async def main() -> None:
        async for event in agent.stream("wait"):
            if isinstance(event, ToolCallStarted):
                agent.cancel()

    asyncio.run(main())
    loaded = Store(history_db).load(agent.conversation.id)
    answer = loaded.messages[-1]
    assert answer.stop_reason == "cancelled"
    assert answer.rounds is not None and len(answer.rounds) == 1
    (result,) = answer.rounds[0].results
    assert not result.ok and "cancelled" in result.content


def test_provider_error_is_stored_and_still_raised(history_db: Path) -> None:
    def script(request: ScriptedRequest) -> Any:
        if request.round_index == 0:
            return reply(calls=[call("add", a=1, b=1)])
        raise RuntimeError("model went away")

    agent = Agent(ScriptedModel(script), tools=[add])
    with pytest.raises(RuntimeError, match="model went away"):
        agent.run_sync("hi")
    assert query(history_db, "SELECT role, stop_reason FROM messages ORDER BY position") == [
        ("user", None),
        ("assistant", "error"),
    ]
    assert query(history_db, "SELECT count(*) FROM rounds") == [(1,)]


def test_creating_an_agent_touches_no_file(history_home: Path) -> None:
    Agent(ScriptedModel())
    assert not history_home.exists()


def test_store_none_and_history_off_write_nothing(
    history_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Agent(ScriptedModel(), store=None).run_sync("hello")
    assert not history_home.exists()
    monkeypatch.setenv("NBAGENT_HISTORY", "off")
    agent = Agent(ScriptedModel())
    assert agent.store is None
    agent.run_sync("hello")
    assert not history_home.exists()
    with pytest.raises(ConfigError, match="history is off"):
        nbagent.history()
    with pytest.raises(ConfigError, match="resume needs history"):
        Agent.resume("c_anything")


def test_agent_env_keys_are_redacted_and_do_not_move_the_file(history_db: Path) -> None:
    key = "env-only-key-" + "7" * 20
    agent = Agent(ScriptedModel(), env={"OPENAI_API_KEY": key})
    agent.run_sync(f"my key is {key}")
    assert query(history_db, "SELECT content FROM messages WHERE role = 'user'") == [
        ("my key is [redacted]",)
    ]


def test_explicit_store_path(tmp_path: Path, history_home: Path) -> None:
    path = tmp_path / "elsewhere" / "mine.db"
    agent = Agent(ScriptedModel(), store=path)
    agent.run_sync("hello")
    assert query(path, "SELECT count(*) FROM messages") == [(2,)]
    assert not history_home.exists()


def test_history_lists_conversations_newest_first(history_db: Path) -> None:
    ids = []
    for number in range(3):
        agent = Agent(ScriptedModel(two_rounds), tools=[add])
        agent.run_sync(f"Question {number}\nwith a second line")
        ids.append(agent.conversation.id)
    frame = nbagent.history(limit=2)
    assert list(frame.columns) == [
        "id", "title", "model", "turns", "rounds", "tool_calls",
        "input_tokens", "output_tokens", "stop_reason", "created", "updated",
    ]  # fmt: skip
    assert list(frame["id"]) == [ids[2], ids[1]]
    assert list(frame["title"]) == ["Question 2", "Question 1"]
    assert list(frame["rounds"]) == [2, 2]
    assert list(frame["tool_calls"]) == [2, 2]
    assert list(frame["stop_reason"]) == ["complete", "complete"]
    assert str(frame["updated"].dtype).startswith("datetime64")
    assert len(nbagent.history(all=True)) == 3


def test_import_nbagent_does_not_import_pandas_or_open_the_store() -> None:
    code = (
        "import sys, nbagent; a = nbagent.Agent(nbagent.testing.ScriptedModel());"
        "print('pandas' in sys.modules, a.store.is_open)"
    )
    out = subprocess.run(
        [sys.executable, "-c", "import nbagent.testing;" + code],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.split() == ["False", "False"]


def test_resume_continues_the_conversation(history_db: Path) -> None:
    agent = Agent(ScriptedModel(two_rounds), tools=[add], system="Be brief.")
    agent.run_sync("Add things.")
    model = ScriptedModel(lambda request: reply(f"{len(request.messages)} messages so far"))
    resumed = Agent.resume(agent.conversation.id[:8], model=model, tools=[add])
    assert resumed.system == "Be brief."
    result = resumed.run_sync("And now?")
    # The model saw the whole earlier exchange, rounds included.
    sent = model.requests[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "user", "assistant"]
    assert sent[1].rounds is not None and len(sent[1].rounds) == 2
    assert result.output == "4 messages so far"
    assert len(Store(history_db).load(agent.conversation.id).messages) == 4


def test_resume_latest_and_bad_ids(history_db: Path) -> None:
    first = Agent(ScriptedModel())
    first.run_sync("one")
    second = Agent(ScriptedModel())
    second.run_sync("two")
    assert Agent.resume(model=ScriptedModel()).conversation.id == second.conversation.id
    with pytest.raises(ConfigError, match="no such conversation"):
        Agent.resume("c_doesnotexist")
    with pytest.raises(ConfigError, match="matches several conversations"):
        Agent.resume("c_")


def test_resume_uses_the_stored_model_by_default(history_db: Path) -> None:
    Agent(ScriptedModel(model="echo")).run_sync("hi")
    resumed = Agent.resume()
    assert resumed.model == "scripted:echo"
    assert resumed.run_sync("again").output == "You said: again"


def test_export_json_and_markdown(tmp_path: Path, history_db: Path) -> None:
    agent = Agent(ScriptedModel(two_rounds), tools=[add])
    agent.run_sync("Add things.")
    store = Store(history_db)
    json_path = store.export(agent.conversation.id, tmp_path / "conversation.json")
    reloaded = nbagent.Conversation.from_json(json_path.read_text())
    assert plain(reloaded) == plain(agent.conversation)
    markdown = store.export(None, tmp_path / "conversation.md").read_text()
    assert "## User" in markdown and "Add things." in markdown
    assert "The total is 9." in markdown


def test_delete(history_db: Path) -> None:
    agent = Agent(ScriptedModel(two_rounds), tools=[add])
    agent.run_sync("Add things.")
    Store(history_db).delete(agent.conversation.id)
    for table in ("conversations", "messages", "rounds", "tool_calls", "tool_results"):
        assert query(history_db, f"SELECT count(*) FROM {table}") == [(0,)]


def test_corrupt_file_is_moved_aside_and_the_run_goes_on(history_db: Path) -> None:
    history_db.parent.mkdir(parents=True)
    garbage = b"this is not a database " * 500
    history_db.write_bytes(garbage)
    agent = Agent(ScriptedModel(two_rounds), tools=[add])
    with pytest.warns(HistoryWarning, match="moved it to history.db.corrupt-"):
        result = agent.run_sync("Add things.")
    assert result.output == "The total is 9."
    (aside,) = history_db.parent.glob("history.db.corrupt-*")
    assert aside.read_bytes() == garbage
    assert plain(Store(history_db).load(agent.conversation.id)) == plain(agent.conversation)


def test_newer_schema_turns_history_off_without_touching_the_file(history_db: Path) -> None:
    import sqlite3

    history_db.parent.mkdir(parents=True)
    db = sqlite3.connect(history_db)
    db.execute("CREATE TABLE future (x)")
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    db.commit()
    db.close()
    before = history_db.read_bytes()
    agent = Agent(ScriptedModel())
    with pytest.warns(HistoryWarning, match="newer than this nbagent"):
        assert agent.run_sync("hi").output == "You said: hi"
    assert history_db.read_bytes() == before


def test_unusable_location_warns_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("NBAGENT_HOME", str(blocker / "nbagent"))
    agent = Agent(ScriptedModel(two_rounds), tools=[add])
    with pytest.warns(HistoryWarning, match="history is off") as caught:
        result = agent.run_sync("Add things.")
    assert len(caught) == 1  # said once, not once per round
    assert result.output == "The total is 9."
    assert result.stop_reason == "complete"


def test_interrupted_message_loads_with_a_note(history_db: Path) -> None:
    """An assistant message never finished (see test_crash for the real kill -9)."""
    store = Store(history_db)
    conversation = nbagent.Conversation()
    conversation.messages += [
        nbagent.Message("user", "hi"),
        nbagent.Message("assistant", "", rounds=[], model="scripted"),
    ]
    # A run that started and never finished: the writer saw RunStarted only.
    store.writer(conversation).on_event(RunStarted("hi", "scripted", conversation.id))
    loaded = store.load(conversation.id)
    assert loaded.messages[-1].content == INTERRUPTED_NOTE
    assert loaded.messages[-1].stop_reason == "interrupted"


def test_writes_from_two_threads_share_one_store(history_db: Path) -> None:
    """The sync API's loop thread and the kernel's own loop may write at once."""
    import threading

    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(10):
                Agent(ScriptedModel(two_rounds), tools=[add]).run_sync("Add.")
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    async def on_this_loop() -> None:
        for _ in range(10):
            await Agent(ScriptedModel(two_rounds), tools=[add]).run("Add.")

    thread = threading.Thread(target=work)
    thread.start()
    asyncio.run(on_this_loop())
    thread.join()
    assert errors == []
    assert query(history_db, "SELECT count(*) FROM rounds") == [(40,)]


def test_where_the_file_lives(history_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    from nbagent.store import history_path

    # An Agent's env= is read first, then the process environment (NBAGENT_HOME here).
    assert history_path({"OPENAI_API_KEY": "x"}) == history_home / "history.db"
    monkeypatch.delenv("NBAGENT_HOME")
    default = Path(platformdirs.user_data_dir("nbagent", appauthor=False)) / "history.db"
    assert history_path({}) == default
    assert history_path({"NBAGENT_HOME": "~/elsewhere"}) == (
        Path.home() / "elsewhere" / "history.db"
    )
    for off in ("off", "0", "false", "NO"):
        assert history_path({"NBAGENT_HISTORY": off, "NBAGENT_HOME": "/x"}) is None
    assert history_path({"NBAGENT_HISTORY": "on", "NBAGENT_HOME": "/x"}) == Path("/x/history.db")
