"""Concurrency that holds, 429 storms that delay but fail nothing, the cost cap and estimate=."""

from __future__ import annotations

import asyncio

import pandas as pd
import pytest

from nbagent import ConfigError
from nbagent.batch import COST_CAP_ERROR, Estimate
from nbagent.batch.limits import AdaptiveConcurrency, RequestRate
from nbagent.tools import tool
from tests.support.agents import http_agent
from tests.support.scripted import Answer
from tests.support.servers import Reply

ROWS = pd.DataFrame({"n": list(range(30))})


def echo(prompt: str, body: dict) -> Answer:
    return Answer(f"done {prompt}")


@pytest.mark.parametrize("concurrency", [1, 3, 8])
def test_a_server_counting_open_requests_never_sees_more_than_the_limit(
    counting, tmp_path, concurrency
):
    server = counting(echo, delay=0.02)
    agent = http_agent("openai:gpt-test", server, tools=[], store=tmp_path / "h.db")
    out = agent.map(ROWS, "row {n}", concurrency=concurrency, progress=False)
    assert out["error"].isna().all()
    assert server.peak == concurrency  # reached, never passed
    assert server.connections <= concurrency + 4  # one pool, connections reused


def test_a_429_storm_delays_rows_but_fails_none(counting, tmp_path):
    storm = {"left": 40}

    def script(prompt: str, body: dict):
        if storm["left"] > 0:
            storm["left"] -= 1
            return Reply(
                429, {"error": {"message": "rate limited"}}, headers={"retry-after": "0.05"}
            )
        return Answer(f"done {prompt}")

    server = counting(script, delay=0.01)
    agent = http_agent("openai:gpt-test", server, tools=[], store=tmp_path / "h.db", max_retries=8)
    out = agent.map(ROWS, "row {n}", concurrency=8, progress=False)
    assert out["error"].isna().all(), out["error"].dropna().tolist()
    assert storm["left"] == 0 and server.count == 30 + 40


def test_concurrency_halves_once_per_429_window_and_grows_back_one_row_at_a_time():
    now = [100.0]
    limit = AdaptiveConcurrency(16, clock=lambda: now[0])
    limit.throttle(2.0)
    limit.throttle(2.0)  # the same overload, seen by another request in flight
    assert limit.capacity == 8 and limit.pause_left() == 2.0
    now[0] += 2.5
    limit.throttle(None)
    assert limit.capacity == 4 and limit.pause_left() == 1.0
    for _ in range(5):  # +1/limit each: about one row more per `limit` answers
        limit.succeeded()
    assert limit.capacity == 5
    for _ in range(200):
        limit.succeeded()
    assert limit.capacity == 16 and limit.throttled == 3


def test_a_429_storm_fails_a_row_only_when_its_own_retries_are_spent(counting, tmp_path):
    def script(prompt: str, body: dict):
        if prompt == "row 2":
            return Reply(429, {"error": {"message": "rate limited"}}, headers={"retry-after": "0"})
        return Answer(f"done {prompt}")

    server = counting(script)
    agent = http_agent("openai:gpt-test", server, tools=[], store=tmp_path / "h.db", max_retries=2)
    out = agent.map(ROWS.head(5), "row {n}", progress=False)
    assert out["error"].notna().tolist() == [False, False, True, False, False]
    assert "rate limited" in out.loc[2, "error"] and server.prompts["row 2"] == 3


def test_max_cost_stops_launching_and_returns_the_partial_frame(counting, tmp_path):
    server = counting(echo)
    agent = http_agent("openai:gpt-4o-mini", server, tools=[], store=tmp_path / "h.db")
    one_row = agent.map(ROWS.head(1), "row {n}!", progress=False)["cost"].iloc[0]
    assert one_row > 0
    out = agent.map(ROWS, "row {n}", max_cost=one_row * 10.5, concurrency=4, progress=False)
    finished = out["error"].isna()
    assert 5 <= finished.sum() <= 10  # rows in flight are counted at the priciest row's cost
    assert out["cost"][finished].sum() <= one_row * 10.5
    assert set(out.loc[~finished, "error"]) == {COST_CAP_ERROR}
    assert out.loc[~finished, "cost"].isna().all()
    assert server.count == 1 + finished.sum()  # a row not run sent nothing


def test_max_cost_needs_a_known_price_before_any_request(counting, tmp_path):
    server = counting(echo)
    agent = http_agent("openai:gpt-test", server, tools=[], store=tmp_path / "h.db")
    with pytest.raises(ConfigError, match="no price"):
        agent.map(ROWS, "row {n}", max_cost=1.0, progress=False)
    assert server.count == 0


def test_estimate_runs_k_sample_rows_which_the_real_run_does_not_pay_again(counting, tmp_path):
    server = counting(echo)
    agent = http_agent("openai:gpt-4o-mini", server, tools=[], store=tmp_path / "h.db")
    estimate = agent.map(ROWS, "row {n}", estimate=5, progress=False)
    assert isinstance(estimate, Estimate)
    assert server.count == 5 and estimate.sampled == 5 and estimate.rows == 30
    assert estimate.rows_left == 25
    assert estimate.cost_low <= estimate.cost <= estimate.cost_high and estimate.cost > 0
    assert "25 of 30 rows left" in str(estimate)
    out = agent.map(ROWS, "row {n}", progress=False)
    assert server.count == 30 and out["error"].isna().all()
    assert out["cost"].sum() == pytest.approx(estimate.cost / 25 * 30, rel=0.2)


def test_tools_needing_approval_are_refused_before_the_first_row(counting, tmp_path, monkeypatch):
    @tool(register=False, requires_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        return "deleted"

    server = counting(echo)
    agent = http_agent("openai:gpt-test", server, tools=[delete], store=tmp_path / "h.db")
    with pytest.raises(ConfigError, match=r"delete need approval.*NBAGENT_APPROVAL=allow:delete"):
        agent.map(ROWS, "row {n}", progress=False)
    assert server.count == 0
    monkeypatch.setenv("NBAGENT_APPROVAL", "allow:delete")
    assert agent.map(ROWS.head(2), "row {n}", progress=False)["error"].isna().all()
    allowed = http_agent(
        "openai:gpt-test",
        server,
        tools=[delete],
        store=tmp_path / "h.db",
        approver=lambda call, tool: True,
    )
    monkeypatch.delenv("NBAGENT_APPROVAL")
    assert allowed.map(ROWS.head(3), "row {n}", progress=False)["error"].isna().all()


async def test_rpm_and_tpm_hold_a_request_that_would_pass_them():
    now = [0.0]
    rate = RequestRate(rpm=2, clock=lambda: now[0])
    await rate.admit(10)
    await rate.admit(10)
    third = asyncio.ensure_future(rate.admit(10))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not third.done()  # a third request in the same minute waits
    third.cancel()
    tokens = RequestRate(tpm=100, clock=lambda: now[0])
    await tokens.admit(60)
    blocked = asyncio.ensure_future(tokens.admit(60))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not blocked.done()  # 120 tokens would pass 100 a minute
    blocked.cancel()
    now[0] += 61  # a minute later both windows are empty again
    await asyncio.wait_for(tokens.admit(60), 1)
    await asyncio.wait_for(rate.admit(10), 1)
