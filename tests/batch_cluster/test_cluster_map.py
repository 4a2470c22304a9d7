"""Agent.map with executor="ray" / "dask", against a loopback server that counts requests.

Each test runs on a local Ray cluster and on a Dask LocalCluster (conftest.py): the
same frame as the local executor, a killed worker, a killed driver then the same
call again, the rate limit held across workers (and Stop), an unpicklable tool.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pydantic import BaseModel

from nbagent import ConfigError
from nbagent.batch import STOPPED_ERROR, BatchControl
from nbagent.tools import tool
from tests.batch_cluster.conftest import RAY_ENV
from tests.support.agents import http_agent
from tests.support.scripted import Answer
from tests.support.servers import Reply

pytestmark = pytest.mark.cluster


class Ticket(BaseModel):
    category: str
    stock: int


@tool(register=False)
def stock(item: str) -> int:
    """How many of ``item`` are in stock."""
    return len(item) * 10


def with_a_tool_round(prompt: str, body: dict) -> Answer | Reply:
    """Ask for the stock first; answer once the tool's result is in the request."""
    if "broken" in prompt:
        return Reply(500, {"error": {"message": "upstream broke"}})
    item = prompt.split(":")[-1].strip()
    results = [m for m in body["messages"] if m["role"] == "tool"]
    if not results:
        return Answer("", calls=[("stock", {"item": item})])
    category = "tool" if "hammer" in item else "other"
    return Answer(json.dumps({"category": category, "stock": int(results[0]["content"])}))


def echo(prompt: str, body: dict) -> Answer:
    return Answer(f"done {prompt}")


ITEMS = pd.DataFrame(
    {"item": ["hammer", "nails", "broken saw", "glue", "hammer", "tape"]},
    index=pd.Index(["a", "b", "c", "d", "e", "f"], name="sku"),
)


def journal(path: Path) -> set[str]:
    """Keys of the rows the journal holds as finished."""
    db = sqlite3.connect(path)
    try:
        return {key for (key,) in db.execute("SELECT key FROM batch_rows WHERE ok = 1")}
    finally:
        db.close()


def wait_for(condition: Callable[[], bool], what: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.01)


def in_background(call: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    """Run ``call`` on a thread; its result (or exception) lands in the returned dict."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = call()
        except BaseException as exc:  # handed to the test, which re-raises it
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, box


def test_the_same_frame_as_the_local_executor(engine, counting, tmp_path):
    server = counting(with_a_tool_round)
    options: dict[str, Any] = {"output_type": Ticket, "progress": False}
    local = http_agent(
        "openai:gpt-test", server, tools=[stock], store=tmp_path / "local.db", max_retries=0
    )
    expected = local.map(ITEMS, "Classify the item: {item}", **options)
    asked_locally = server.count
    agent = http_agent(
        "openai:gpt-test", server, tools=[stock], store=tmp_path / "cluster.db", max_retries=0
    )
    out = agent.map(ITEMS, "Classify the item: {item}", executor=engine, **options)
    # Every distinct row ran on the cluster (the duplicate "hammer" once), tool round included.
    assert server.count == 2 * asked_locally
    pd.testing.assert_frame_equal(out.drop(columns="seconds"), expected.drop(columns="seconds"))
    assert list(out.index) == list("abcdef") and out.loc["a", "stock"] == 60
    assert (
        out.loc["c", "error"].startswith("ProviderError: ")
        and "upstream broke" in (out.loc["c", "error"])
    )
    # The driver wrote the journal and the failed row's conversation (history="failed").
    db = sqlite3.connect(tmp_path / "cluster.db")
    try:
        assert db.execute("SELECT count(*) FROM batch_rows WHERE ok = 1").fetchone() == (4,)
        assert db.execute(
            "SELECT count(*) FROM messages WHERE content = 'Classify the item: broken saw'"
        ).fetchone() == (1,)
    finally:
        db.close()


def worker_pids(engine: str, request: pytest.FixtureRequest) -> list[int]:
    """The processes that run rows: Ray's RowActor processes, or Dask's workers."""
    if engine == "dask":
        client = request.getfixturevalue("dask_client")
        return sorted(client.run(os.getpid).values())
    import psutil

    return [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if "RowActor" in " ".join(p.info["cmdline"] or ())
    ]


def waiting_on_the_server(pids: list[int], server: Any) -> list[int]:
    """Those of ``pids`` with a request the server is holding (by its client port)."""
    import psutil

    ports = server.ports_in_flight()
    busy = []
    for pid in pids:
        try:
            connections = psutil.Process(pid).net_connections(kind="tcp")
        except psutil.NoSuchProcess:
            continue
        if any(c.laddr and c.laddr.port in ports for c in connections):
            busy.append(pid)
    return busy


def test_a_killed_worker_s_rows_are_run_again_not_dropped(engine, counting, tmp_path, request):
    server = counting(echo, delay=0.4)
    agent = http_agent("openai:gpt-test", server, tools=[], store=tmp_path / "h.db")
    rows = pd.DataFrame({"n": range(12)})
    thread, box = in_background(
        lambda: agent.map(rows, "row {n}", executor=engine, concurrency=4, progress=False)
    )
    # Kill a worker while the server holds a reply it is waiting for: its row is lost
    # there, so the only way that row gets its answer is to be asked again.
    wait_for(lambda: len(worker_pids(engine, request)) == 2, "two workers")
    busy: list[int] = []

    def a_worker_is_waiting() -> bool:
        busy[:] = waiting_on_the_server(worker_pids(engine, request), server)
        return bool(busy)

    wait_for(a_worker_is_waiting, "a worker with a request at the server")
    os.kill(busy[0], signal.SIGKILL)
    thread.join(180)
    assert not thread.is_alive()
    assert "error" not in box, box.get("error")
    out = box["result"]
    assert out["error"].isna().all(), out["error"].dropna().tolist()
    assert list(out["output"]) == [f"done row {n}" for n in range(12)]
    # The killed worker's row was asked again, elsewhere; every row has its answer.
    assert any(count > 1 for count in server.prompts.values()), server.prompts
    assert set(server.prompts) == {f"row {n}" for n in range(12)}


CHILD = textwrap.dedent(
    """
    import sys
    import pandas as pd
    from nbagent import Agent

    url, store, engine, address = sys.argv[1:5]
    if engine == "ray":
        import ray
        ray.init(address=address, log_to_driver=False)
    else:
        from distributed import Client
        Client(address)
    agent = Agent("openai:gpt-test", base_url=url + "/v1", api_key="sk-test-0123456789",
                  env={}, tools=[], store=store)
    out = agent.map(pd.DataFrame({"n": list(range(30))}), "row {n}", concurrency=4,
                    executor=engine, progress=False)
    print("ERRORS", int(out["error"].notna().sum()), flush=True)
    """
)


def test_a_killed_driver_then_the_same_call_resumes_from_the_journal(
    engine, counting, tmp_path, request
):
    server = counting(echo, delay=0.2)
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    store = tmp_path / "h.db"
    if engine == "ray":
        address = request.getfixturevalue("ray_cluster")
    else:
        address = request.getfixturevalue("dask_client").scheduler.address
    env = {**os.environ, **RAY_ENV, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [sys.executable, str(script), server.url, str(store), engine, address], env=env
    )
    try:
        wait_for(lambda: server.count >= 12 or child.poll() is not None, "12 requests")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL
    journaled_at_kill = journal(store)
    assert 5 <= len(journaled_at_kill) < 30
    asked_before = server.count

    # The same call again, here: no finished row is asked twice.
    agent = http_agent("openai:gpt-test", server, tools=[], store=store)
    out = agent.map(
        pd.DataFrame({"n": list(range(30))}), "row {n}", concurrency=4, executor=engine,
        progress=False,
    )  # fmt: skip
    assert out["error"].isna().all()
    twice = [prompt for prompt, n in server.prompts.items() if n > 1]
    assert len(twice) <= 4  # only rows in flight at the kill (at most the concurrency)
    assert server.count == 30 + len(twice)
    assert len(journal(store)) == 30
    print(
        f"{engine}: requests before kill {asked_before}, journaled {len(journaled_at_kill)}, "
        f"after resume {server.count}, asked twice {len(twice)}"
    )


def test_rpm_holds_across_workers_and_stop_returns_what_finished(engine, counting, tmp_path):
    server = counting(echo)
    agent = http_agent("openai:gpt-test", server, tools=[], store=tmp_path / "h.db")
    control = BatchControl()
    rows = pd.DataFrame({"n": range(8)})
    thread, box = in_background(
        lambda: agent.map(
            rows,
            "row {n}",
            executor=engine,
            rpm=3,
            concurrency=8,
            control=control,
            progress=False,
        )  # fmt: skip
    )
    wait_for(lambda: server.count >= 3, "the first 3 requests")
    # 3 a minute for the cluster: a limiter per worker would have let 6 through by now
    # (the server answers at once and each worker's own copy would allow 3).
    time.sleep(2)
    assert server.count == 3
    control.stop()
    thread.join(60)
    assert not thread.is_alive() and "error" not in box, box.get("error")
    out = box["result"]
    assert out["error"].isna().sum() == 3
    assert set(out["error"].dropna()) == {STOPPED_ERROR}
    assert server.count == 3  # nothing was sent after Stop


def test_an_unpicklable_tool_is_refused_before_any_row_naming_it(engine, counting, tmp_path):
    lock = threading.Lock()

    @tool(register=False)
    def guarded(item: str) -> str:
        """Look ``item`` up, one caller at a time."""
        with lock:
            return item

    server = counting(echo)
    agent = http_agent("openai:gpt-test", server, tools=[guarded], store=tmp_path / "h.db")
    with pytest.raises(ConfigError, match=r"tool 'guarded' cannot be sent to the cluster"):
        agent.map(ITEMS, "Look up {item}", executor=engine, progress=False)
    assert server.count == 0
