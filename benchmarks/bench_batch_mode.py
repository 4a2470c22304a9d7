"""``Agent.map(..., mode="batch")`` against the live ``map`` on the same loopback answers.

Run: ``python benchmarks/bench_batch_mode.py [--rows 2000]``

Both servers run in this process (tests/support: ``BatchApiServer`` for the OpenAI
Batch API, ``live_responder`` for non-streamed Chat Completions) and answer at once,
so the numbers are nbagent's own cost per row: the live path's one request per row
against batch mode's bodies, one JSONL upload, a few status polls, one results file
and the job journal. Rows are single-round (no tools). Measured in one run:

1. the live ``map`` (concurrency 32) and batch mode, wall time and the ratio;
2. batch mode again on the same history with the rows' journal cleared of rows
   (``resume`` collects the journaled job): the collection path's time;
3. the job journal: rows in ``batch_job_requests`` and the file's growth per request.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd  # noqa: E402

from nbagent.batch.provider_batch import ProviderBatch  # noqa: E402
from tests.support.agents import http_agent  # noqa: E402
from tests.support.batch_servers import BatchApiServer, live_responder  # noqa: E402
from tests.support.scripted import Answer  # noqa: E402
from tests.support.servers import WireServer  # noqa: E402


def script(prompt: str, body: dict) -> Answer:
    return Answer(f"done {prompt}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2000)
    args = parser.parse_args()
    os.environ.setdefault("NBAGENT_HOME", tempfile.mkdtemp())
    rows = pd.DataFrame({"n": range(args.rows)})
    folder = Path(tempfile.mkdtemp())

    live = WireServer(responder=live_responder(script, []))
    live.keep_requests = False
    agent = http_agent("openai:gpt-4o-mini", live, tools=[], store=folder / "live.db")
    started = time.perf_counter()
    out = agent.map(rows, "row {n}", progress=False, stream=False, concurrency=32)
    live_s = time.perf_counter() - started
    live.close()
    assert out["error"].isna().all()

    server = BatchApiServer(script, polls=1)
    server.server.keep_requests = False
    history = folder / "batch.db"
    agent = http_agent("openai:gpt-4o-mini", server, tools=[], store=history)
    mode = ProviderBatch(poll_interval=0.01)
    started = time.perf_counter()
    out = agent.map(rows, "row {n}", progress=False, mode=mode)
    batch_s = time.perf_counter() - started
    assert out["error"].isna().all() and len(server.jobs) == 1

    db = sqlite3.connect(history)
    requests = db.execute("SELECT COUNT(*) FROM batch_job_requests").fetchone()[0]
    db.execute("DELETE FROM batch_rows")  # the rows forgotten: only the job journal is left
    db.commit()
    db.close()
    started = time.perf_counter()
    again = http_agent("openai:gpt-4o-mini", server, tools=[], store=history)
    out = again.map(rows, "row {n}", progress=False, mode=mode)
    collect_s = time.perf_counter() - started
    assert out["error"].isna().all() and len(server.jobs) == 1, len(server.jobs)
    server.close()

    n = args.rows
    print(f"rows: {n:,} single-round, load {os.getloadavg()[0]:.2f}")
    print(f"live map (concurrency 32): {live_s:.2f} s ({live_s / n * 1000:.2f} ms a row)")
    print(f"batch mode, one job:       {batch_s:.2f} s ({batch_s / n * 1000:.2f} ms a row), "
          f"{batch_s / live_s:.2f}x live")  # fmt: skip
    print(f"collect the journaled job: {collect_s:.2f} s ({collect_s / n * 1000:.2f} ms a row)")
    print(f"job journal: {requests:,} request rows, history file "
          f"{history.stat().st_size / n:.0f} bytes a row")  # fmt: skip


if __name__ == "__main__":
    main()
