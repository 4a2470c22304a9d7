"""What Agent.map returns: the input's index, only new columns, typed fields, one row per row."""

from __future__ import annotations

import json
import logging
import math

import pandas as pd
import pytest
from pydantic import BaseModel

from nbagent import ConfigError
from nbagent.tools import tool
from tests.support.agents import http_agent
from tests.support.scripted import Answer
from tests.support.servers import Reply


class Ticket(BaseModel):
    category: str
    urgent: bool
    score: int


TICKETS = pd.DataFrame(
    {
        "subject": ["Refund please", "App crashes", "Love it", "App crashes"],
        "body": ["I was charged twice", "On start", "Great app", "On start"],
    },
    index=pd.Index(["t1", "t2", "t3", "t4"], name="ticket"),
)


def classify(prompt: str, body: dict) -> Answer:
    category = "billing" if "Refund" in prompt else "bug" if "crash" in prompt else "praise"
    return Answer(
        json.dumps({"category": category, "urgent": category == "bug", "score": len(prompt)})
    )


def test_typed_columns_keep_the_index_and_add_only_new_columns(counting, tmp_path):
    server = counting(classify)
    agent = http_agent("openai:gpt-test", server, tools=[], store=tmp_path / "h.db")
    out = agent.map(TICKETS, "Classify: {subject}\n{body}", output_type=Ticket, progress=False)
    assert list(out.index) == ["t1", "t2", "t3", "t4"] and out.index.name == "ticket"
    assert list(out.columns) == [
        "category",
        "urgent",
        "score",
        "error",
        "cost",
        "tokens",
        "rounds",
        "seconds",
    ]
    assert list(out["category"]) == ["billing", "bug", "praise", "bug"]
    assert out["urgent"].dtype == bool and out["score"].dtype.kind == "i"
    assert out["error"].isna().all() and out["cost"].isna().all()  # gpt-test has no price
    assert (out["tokens"] > 0).all() and (out["rounds"] == 0).all()
    # Each request carried the row's own values and the structured-output schema.
    bodies = server.bodies()
    assert {b["messages"][-1]["content"] for b in bodies} == {
        "Classify: Refund please\nI was charged twice",
        "Classify: App crashes\nOn start",
        "Classify: Love it\nGreat app",
    }
    assert all(b["response_format"]["json_schema"]["name"] == "Ticket" for b in bodies)
    joined = TICKETS.join(out)
    assert joined.loc["t1", "category"] == "billing"


def test_identical_rows_are_run_once(counting, tmp_path):
    server = counting(classify)
    agent = http_agent("openai:gpt-test", server, tools=[], store=tmp_path / "h.db")
    out = agent.map(TICKETS, "Classify: {subject}\n{body}", output_type=Ticket, progress=False)
    assert server.count == 3  # t2 and t4 are the same ticket
    assert out.loc["t2", "score"] == out.loc["t4", "score"]


def test_strings_and_dicts_are_rows_and_text_lands_in_output(counting, tmp_path):
    server = counting(lambda prompt, body: Answer(prompt.upper()))
    agent = http_agent("openai:gpt-test", server, tools=[], store=tmp_path / "h.db")
    out = agent.map(["a cat", "a dog"], "Say: {text}", progress=False)
    assert list(out.index) == [0, 1] and list(out["output"]) == ["SAY: A CAT", "SAY: A DOG"]
    out = agent.map([{"n": 1}, {"n": 2}], "Number {n:03d}", progress=False)
    assert list(out["output"]) == ["NUMBER 001", "NUMBER 002"]


def test_a_clash_names_the_column_and_prefix(counting, tmp_path):
    server = counting(classify)
    agent = http_agent("openai:gpt-test", server, tools=[], store=tmp_path / "h.db")
    frame = TICKETS.assign(error=None)
    with pytest.raises(ConfigError, match=r"'error'.*prefix="):
        agent.map(frame, "Classify: {subject}", progress=False)
    assert server.count == 0
    out = agent.map(frame, "Classify: {subject}", prefix="ai_", progress=False)
    assert list(out.columns)[:2] == ["ai_output", "ai_error"]
    assert frame.join(out).shape == (4, 3 + 6)


def test_a_field_that_is_no_column_is_refused_before_any_request(counting, tmp_path):
    server = counting(classify)
    agent = http_agent("openai:gpt-test", server, tools=[], store=tmp_path / "h.db")
    with pytest.raises(ConfigError, match=r"\{subjct\}.*columns: subject, body"):
        agent.map(TICKETS, "Classify: {subjct}", progress=False)
    with pytest.raises(ConfigError, match="unknown option.*max_roundz"):
        agent.map(TICKETS, "Classify: {subject}", max_roundz=2, progress=False)
    assert server.count == 0


def test_each_row_runs_its_tools_in_a_conversation_of_its_own(counting, tmp_path):
    @tool(register=False)
    def stock(item: str) -> int:
        """Units in stock."""
        return {"apple": 3, "pear": 0}[item]

    def script(prompt: str, body: dict) -> Answer:
        messages = body["messages"]
        if messages[-1]["role"] == "user":
            return Answer("", [("stock", {"item": prompt.split()[-1]})])
        return Answer(f"{prompt.split()[-1]}: {messages[-1]['content']}")

    server = counting(script)
    agent = http_agent("openai:gpt-test", server, tools=[stock], store=tmp_path / "h.db")
    out = agent.map(pd.DataFrame({"item": ["apple", "pear"]}), "How many {item}", progress=False)
    assert list(out["output"]) == ["apple: 3", "pear: 0"]
    assert list(out["rounds"]) == [1, 1]
    # No row saw another's history: every request holds one user message.
    assert all(sum(m["role"] == "user" for m in b["messages"]) == 1 for b in server.bodies())
    assert agent.conversation.messages == []  # the agent's own conversation is untouched


def test_one_bad_row_never_stops_the_batch(counting, tmp_path, caplog):
    @tool(register=False)
    def lookup(key: str) -> str:
        """Look a key up."""
        if key == "boom":
            raise RuntimeError("the lookup service is down")
        return key * 2

    def script(prompt: str, body: dict) -> Answer:
        word = prompt.split()[-1]
        if body["messages"][-1]["role"] == "tool":
            return Answer(
                json.dumps(
                    {"category": body["messages"][-1]["content"], "urgent": False, "score": 1}
                )
            )
        if word == "invalid":
            return Answer("not json at all")
        if word == "refused":
            return Reply(
                400,
                {
                    "error": {
                        "message": "content refused by policy",
                        "type": "invalid_request_error",
                    }
                },
            )
        return Answer("", [("lookup", {"key": word})])

    server = counting(script)

    agent = http_agent(
        "openai:gpt-test",
        server,
        tools=[lookup],
        store=tmp_path / "h.db",
        max_consecutive_errors=1,
        max_retries=0,
    )
    rows = pd.DataFrame({"word": ["ok", "boom", "invalid", "fine", "refused"]})
    out = agent.map(rows, "Look up {word}", output_type=Ticket, progress=False)
    assert list(out["category"])[0] == "okok" and list(out["category"])[3] == "finefine"
    assert out.loc[0, "error"] is None and out.loc[3, "error"] is None
    assert (
        "lookup failed" in out.loc[1, "error"]
        and "the lookup service is down" in out.loc[1, "error"]
    )
    assert out.loc[2, "error"].startswith("output invalid")
    assert "content refused by policy" in out.loc[4, "error"] and "400" in out.loc[4, "error"]
    assert math.isnan(out.loc[1, "cost"]) and pd.isna(out.loc[1, "category"])
    # The error column says why; the rows' loop warnings do not flood the output.
    assert not [r for r in caplog.records if r.levelno == logging.WARNING], caplog.text


def test_another_executor_runs_the_rows_while_the_driver_keeps_the_journal(counting, tmp_path):
    class OneAtATime:
        """An executor of our own: rows strictly in order, one by one."""

        def __init__(self) -> None:
            self.order: list[str] = []

        async def run(self, jobs, run_row, gate):
            for job in jobs:
                if not gate.may_launch(0):
                    return
                self.order.append(job.prompt)
                yield await run_row(job)

    server = counting(classify)
    agent = http_agent("openai:gpt-test", server, tools=[], store=tmp_path / "h.db")
    executor = OneAtATime()
    out = agent.map(
        TICKETS, "Classify: {subject}\n{body}", output_type=Ticket, executor=executor,
        progress=False,
    )  # fmt: skip
    assert server.peak == 1 and len(executor.order) == 3  # t4 is t2 again
    assert list(out["category"]) == ["billing", "bug", "praise", "bug"]
    again = agent.map(TICKETS, "Classify: {subject}\n{body}", output_type=Ticket, progress=False)
    assert server.count == 3  # the journal the driver wrote serves the local executor too
    assert list(again["category"]) == list(out["category"])
