"""``Agent.map(..., mode="batch")`` against loopback servers of the three batch APIs."""

from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from typing import Any

import pandas as pd
import pytest
from pydantic import BaseModel

from nbagent import tool
from nbagent.batch.provider_batch import ProviderBatch
from tests.support.agents import http_agent
from tests.support.batch_servers import BatchApiServer, live_responder, prompt_of
from tests.support.env import child_environment
from tests.support.scripted import Answer
from tests.support.servers import WireServer

FAST = ProviderBatch(poll_interval=0.01)
MODELS = ["openai:gpt-4o-mini", "anthropic:claude-haiku-4-5", "gemini:gemini-2.5-flash"]


@tool(register=False)
def letters(word: str) -> int:
    """How many letters ``word`` has."""
    return len(word)


def counting_script(prompt: str, body: dict[str, Any]) -> Answer:
    """One tool round (letters), then the answer; the row "short" answers at once."""
    word = prompt.split()[-1]
    if word == "fig":
        return Answer(f"{word} is short")
    turns = body.get("messages") or body.get("contents")
    if len(turns) == 1:
        return Answer("", [("letters", {"word": word})])
    return Answer(f"{word} has letters")


ROWS = pd.DataFrame({"w": ["pear", "apple", "fig", "kiwi"]}, index=[10, 11, 12, 13])
PROMPT = "Count the letters of {w}"


@pytest.fixture
def batch_server():
    server = BatchApiServer(counting_script)
    yield server
    server.close()


def _same(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=["cost", "seconds"])


def test_batch_frame_and_bodies_match_the_live_path_at_half_the_price(batch_server, tmp_path):
    live_bodies: list[dict[str, Any]] = []
    live = WireServer(responder=live_responder(counting_script, live_bodies))
    try:
        agent = http_agent("openai:gpt-4o-mini", live, tools=[letters], store=tmp_path / "live.db")
        expected = agent.map(ROWS, PROMPT, progress=False, stream=False)
    finally:
        live.close()
    agent = http_agent("openai:gpt-4o-mini", batch_server, tools=[letters], store=tmp_path / "b.db")
    out = agent.map(ROWS, PROMPT, progress=False, mode=FAST)

    pd.testing.assert_frame_equal(_same(out), _same(expected))
    assert out["error"].isna().all()
    assert list(out["rounds"]) == [1, 1, 0, 1]
    # Round 1: four first requests in one job; round 2: the three rows after their tool.
    assert [len(job["lines"]) for job in batch_server.jobs.values()] == [4, 3]
    # Every JSONL line's body is byte for byte what the live (non-streamed) API got.
    canon = sorted(json.dumps(b, sort_keys=True) for b in live_bodies)
    assert sorted(json.dumps(b, sort_keys=True) for _, b in batch_server.lines) == canon
    # The batch price: half of the live price for the same tokens (genai-prices' variant).
    assert out["cost"].sum() == pytest.approx(expected["cost"].sum() / 2)
    assert (out["cost"] > 0).all()


@pytest.mark.parametrize("model", ["anthropic:claude-haiku-4-5", "gemini:gemini-2.5-flash"])
def test_anthropic_and_gemini_jobs_answer_rows_in_any_result_order(batch_server, model, tmp_path):
    agent = http_agent(model, batch_server, tools=[letters], store=tmp_path / "h.db")
    out = agent.map(ROWS, PROMPT, progress=False, mode=FAST)
    assert out["error"].isna().all(), out["error"].tolist()
    assert list(out["output"]) == ["pear has letters", "apple has letters", "fig is short",
                                   "kiwi has letters"]  # fmt: skip
    assert [len(job["lines"]) for job in batch_server.jobs.values()] == [4, 3]
    assert (out["cost"] > 0).all()


@pytest.mark.parametrize("model", MODELS)
def test_errored_and_expired_rows_fill_error_and_are_sent_again_next_call(
    batch_server, model, tmp_path
):
    batch_server.fail = {"Count the letters of apple"}
    batch_server.expire = {"Count the letters of fig"}
    agent = http_agent(model, batch_server, tools=[letters], store=tmp_path / "h.db")
    out = agent.map(ROWS, PROMPT, progress=False, mode=FAST)
    assert out.loc[10, "error"] is None and out.loc[13, "error"] is None
    assert "batch_errored" in out.loc[11, "error"]
    # Gemini's inline results carry a Status per failed request, expired ones included.
    assert "expired" in out.loc[12, "error"]
    sent = len(batch_server.lines)

    batch_server.fail, batch_server.expire = set(), set()
    again = agent.map(ROWS, PROMPT, progress=False, mode=FAST)
    assert again["error"].isna().all()
    resent = [prompt_of(body) for _, body in batch_server.lines[sent:]]
    # Only the two failed rows were sent again (apple needs its tool round too).
    assert sorted(set(resent)) == ["Count the letters of apple", "Count the letters of fig"]
    assert len(resent) == 3


def _wait_for_job(handle: Any) -> None:
    for _ in range(500):
        if handle.status()["jobs"]:
            return
        time.sleep(0.01)
    raise AssertionError("no job was submitted")


def _journaled_jobs(history: Any) -> list[tuple[Any, ...]]:
    if not history.exists():
        return []
    db = sqlite3.connect(history)
    try:
        return db.execute("SELECT job_id FROM batch_jobs").fetchall()
    except sqlite3.OperationalError:  # not migrated yet
        return []
    finally:
        db.close()


CHILD = textwrap.dedent(
    """
    import sys
    import pandas as pd
    from nbagent import Agent, tool
    from nbagent.batch.provider_batch import ProviderBatch

    @tool(register=False)
    def letters(word: str) -> int:
        \"\"\"How many letters word has.\"\"\"
        return len(word)

    url, store = sys.argv[1], sys.argv[2]
    agent = Agent("openai:gpt-4o-mini", base_url=url + "/v1", api_key="sk-test-0123456789",
                  env={}, tools=[letters], store=store)
    rows = pd.DataFrame({"w": ["pear", "apple", "fig", "kiwi"]}, index=[10, 11, 12, 13])
    out = agent.map(rows, "Count the letters of {w}", progress=False,
                    mode=ProviderBatch(poll_interval=0.01))
    print(out.to_json(), flush=True)
    """
)


def test_after_kill_9_the_same_call_collects_the_journaled_job(batch_server, tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    history = tmp_path / "h.db"
    env = child_environment(PYTHONPATH=os.pathsep.join(sys.path))
    command = [sys.executable, str(script), batch_server.url, str(history)]
    batch_server.polls = 10**9  # the job runs until the kernel is gone
    child = subprocess.Popen(command, env=env)
    deadline = time.monotonic() + 60
    # Killed once the job is journaled (between the API's accepting a job and its
    # journal write, a kill would lose the job id: those requests are sent again).
    while not _journaled_jobs(history) and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert len(batch_server.jobs) == 1

    batch_server.polls = 1
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    out = pd.read_json(io.StringIO(again.stdout.strip().splitlines()[-1]))
    assert out["error"].isna().all()
    assert list(out["output"]) == ["pear has letters", "apple has letters", "fig is short",
                                   "kiwi has letters"]  # fmt: skip
    # The first round came from the journaled job (its results read, not sent again);
    # only the rows' tool round was a new job.
    assert [len(job["lines"]) for job in batch_server.jobs.values()] == [4, 3]
    assert batch_server.result_reads >= 2


def test_cancel_cancels_the_job_and_returns_the_partial_frame(batch_server, tmp_path):
    batch_server.polls = 10**9
    agent = http_agent("openai:gpt-4o-mini", batch_server, tools=[letters], store=tmp_path / "h.db")
    handle = agent.map(ROWS, PROMPT, progress=False, mode=FAST, wait=False)
    _wait_for_job(handle)
    handle.cancel()
    frame = handle.result(timeout=10)
    assert batch_server.cancels == 1
    assert len(batch_server.jobs) == 1  # no round after the cancel
    assert frame["error"].str.contains("batch_cancelled").all(), frame["error"].tolist()
    assert handle.status()["jobs"][0]["state"] == "cancelled"


def test_batch_mode_refuses_what_it_cannot_do(tmp_path):
    from nbagent.errors import ConfigError

    agent = http_agent("openai:gpt-4o-mini", "http://127.0.0.1:9", tools=[], store=None)
    with pytest.raises(ConfigError, match="max_cost"):
        agent.map(["a"], "{text}", mode="batch", max_cost=1.0, progress=False)
    with pytest.raises(ConfigError, match="wait=False"):
        agent.map(["a"], "{text}", wait=False, progress=False)
    ollama = http_agent("ollama:qwen3", "http://127.0.0.1:9", tools=[], store=None)
    with pytest.raises(ConfigError, match="batch API"):
        ollama.map(["a"], "{text}", mode="batch", progress=False)


def test_agent_batches_lists_the_jobs_from_the_reopened_history(batch_server, shell, tmp_path):
    from IPython.utils.capture import capture_output

    from nbagent.store import Store

    history = tmp_path / "h.db"
    agent = http_agent("openai:gpt-4o-mini", batch_server, tools=[letters], store=history)
    agent.map(ROWS, PROMPT, progress=False, mode=FAST)
    shell.user_ns["reopened"] = http_agent(
        "openai:gpt-4o-mini", batch_server, tools=[letters], store=Store(history)
    )
    shell.run_line_magic("agent", "model reopened")
    with capture_output() as captured:
        shell.run_line_magic("agent", "batches")
    lines = captured.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines] == ["batch_002", "batch_001"]
    assert "ended  round 1  3 requests (3 succeeded, 0 failed)  $" in lines[0]
    assert "ended  round 0  4 requests (4 succeeded, 0 failed)  $" in lines[1]


class Size(BaseModel):
    word: str
    letters: int


def typed_script(prompt: str, body: dict[str, Any]) -> Answer:
    word = prompt.split()[-1]
    value = {"word": word, "letters": len(word)}
    names = [t.get("name") for t in body.get("tools") or []]
    if "final_answer" in names:  # Anthropic's typed output: the forced final_answer tool
        return Answer("", [("final_answer", value)])
    return Answer(json.dumps(value))  # OpenAI's response_format, Gemini's responseSchema


@pytest.mark.parametrize("model", MODELS)
def test_typed_columns_come_from_each_batch_api(model, tmp_path):
    server = BatchApiServer(typed_script, polls=1)
    try:
        agent = http_agent(model, server, tools=[], store=tmp_path / "h.db")
        out = agent.map(ROWS, PROMPT, output_type=Size, progress=False, mode=FAST)
    finally:
        server.close()
    assert out["error"].isna().all(), out["error"].tolist()
    assert list(out["word"]) == ["pear", "apple", "fig", "kiwi"]
    assert list(out["letters"]) == [4, 5, 3, 4]
    assert len(server.jobs) == 1


def test_a_recorded_batch_call_replays_with_no_server(batch_server, tmp_path):
    from nbagent import Agent

    recording = tmp_path / "batch.jsonl"
    agent = http_agent(
        "openai:gpt-4o-mini", batch_server, tools=[letters], store=tmp_path / "a.db",
        record=recording,
    )  # fmt: skip
    recorded = agent.map(ROWS, PROMPT, progress=False, mode=FAST)
    batch_server.close()

    replayed = Agent(
        "openai:gpt-4o-mini", base_url=batch_server.url + "/v1", env={}, tools=[letters],
        store=tmp_path / "b.db", replay=recording,
    )  # fmt: skip
    out = replayed.map(ROWS, PROMPT, progress=False, mode=FAST)
    pd.testing.assert_frame_equal(_same(out), _same(recorded))
    assert out["error"].isna().all()


def test_a_round_larger_than_a_job_is_split_into_several(batch_server, tmp_path):
    rows = pd.DataFrame({"w": [f"w{n:02d}" for n in range(7)]})
    agent = http_agent("anthropic:claude-haiku-4-5", batch_server, tools=[letters],
                       store=tmp_path / "h.db")  # fmt: skip
    mode = ProviderBatch(poll_interval=0.01, max_job_requests=3)
    out = agent.map(rows, PROMPT, progress=False, mode=mode)
    assert out["error"].isna().all()
    assert list(out["output"]) == [f"w{n:02d} has letters" for n in range(7)]
    # Two rounds of seven requests, each split 3 + 3 + 1.
    assert [len(job["lines"]) for job in batch_server.jobs.values()] == [3, 3, 1, 3, 3, 1]


def test_a_failing_poll_is_asked_again_and_a_refused_job_is_sent_next_call(batch_server, tmp_path):
    agent = http_agent("openai:gpt-4o-mini", batch_server, tools=[letters], store=tmp_path / "h.db")
    batch_server.status_failures = 2
    out = agent.map(ROWS.head(1), PROMPT, progress=False, mode=FAST)
    assert out["error"].isna().all() and batch_server.status_failures == 0

    batch_server.submit_failures = 1
    rows = ROWS.tail(2)
    out = agent.map(rows, PROMPT, progress=False, mode=FAST)
    assert out["error"].str.contains("batch service unavailable").all()
    out = agent.map(rows, PROMPT, progress=False, mode=FAST)
    assert out["error"].isna().all()


@pytest.mark.parametrize(
    ("model", "note"),
    [
        ("openai:chatgpt-4o-latest", "standard price: genai-prices knows no batch discount"),
        ("openai:gpt-test", "cost unknown"),
    ],
)
def test_without_a_known_batch_price_the_listing_says_so(batch_server, model, note, tmp_path):
    from nbagent.magic.batches import batches_text
    from nbagent.store import Store

    history = tmp_path / "h.db"
    out = http_agent(model, batch_server, tools=[], store=history).map(
        ROWS.head(2), "Say {w}", progress=False, mode=FAST
    )
    assert out["error"].isna().all()
    assert out["cost"].isna().all() == ("unknown" in note)
    assert note in batches_text(Store(history))
