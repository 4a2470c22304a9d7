"""``Agent.map`` on one machine against Ray and Dask executors, and the per-row costs.

Run: ``python benchmarks/bench_map_cluster.py [--rows 20000]`` (``--rows 500``: a
quick check). Needs the ``ray`` and ``dask`` extras.

The server is bench_map.py's: tests/support/servers.py's WireServer in a process of
its own, answering every Chat Completions request at once (SSE). In one run:

1. ``--rows`` single-round rows at concurrency 32, journal on: the local executor
   (the baseline), then ``executor=RayExecutor(num_workers=2)`` on a local Ray of 2
   CPUs, then ``executor=DaskExecutor(client=...)`` on a LocalCluster of 2 worker
   processes with 16 threads each (a Dask task holds a thread for its row). Rows/s
   and the ratio to local; the driver's CPU a row and RSS growth over each run.
2. The costs a bigger cluster multiplies: the driver's journal write per row, the
   bytes of one row's result as it travels to the driver, and a limiter round trip
   (one per request), one at a time and in a burst of 2,000 at once (how many
   requests a second the one limiter can admit).

Ray's files go to a temporary folder removed at the end; both clusters are shut down.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pandas as pd  # noqa: E402
from bench_map import journal_cost, responder, rss_mb  # noqa: E402

from nbagent import Agent  # noqa: E402
from nbagent.batch.distributed import DaskExecutor, RayExecutor  # noqa: E402
from nbagent.batch.distributed.limiter import SharedLimiter  # noqa: E402
from nbagent.batch.distributed.spec import build_spec  # noqa: E402
from nbagent.batch.distributed.worker import WorkerAgent  # noqa: E402
from tests.support.servers import ServerProcess  # noqa: E402

CONCURRENCY = 32
WORKERS = 2
BURST = 2000
"""Limiter calls sent at once to measure the one limiter's capacity."""


@dataclass
class Run:
    """One map's wall time, and what it cost the driver process."""

    seconds: float
    driver_cpu: float
    """CPU seconds of the driver process (all its threads: Ray's and Dask's clients too)."""
    rss_growth: float
    """MB."""


def timed_map(url: str, frame: pd.DataFrame, store: Path, executor: Any) -> Run:
    """One map of ``frame`` (every row must succeed)."""
    agent = Agent("openai:gpt-bench", base_url=url, api_key="sk-bench", env={}, store=store)
    before, cpu = rss_mb(), time.process_time()
    started = time.perf_counter()
    out = agent.map(
        frame, "Classify: {text}", concurrency=CONCURRENCY, progress=False, executor=executor
    )
    took = time.perf_counter() - started
    assert out["error"].isna().all(), out["error"].dropna().head().tolist()
    assert len(out) == len(frame)
    return Run(took, time.process_time() - cpu, rss_mb() - before)


def line(label: str, run: Run, rows: int, base: Run) -> None:
    print(
        f"  {label:34s} {run.seconds:7.2f} s {rows / run.seconds:6.0f} rows/s "
        f"{base.seconds / run.seconds:5.2f}x local  driver {run.driver_cpu / rows * 1000:.2f} "
        f"ms CPU a row, RSS +{run.rss_growth:.0f} MB"
    )


class _LocalLimiter:
    """LimiterCalls answered in this process (for the one-row size measurement)."""

    def __init__(self) -> None:
        self.limiter = SharedLimiter()

    async def admit(self, tokens: int) -> None:
        await self.limiter.admit(tokens)

    async def throttle(self, wait: float | None) -> None:
        self.limiter.throttle(wait)


def result_bytes(url: str) -> int:
    """Pickled size of one row's result as a worker sends it to the driver."""
    import cloudpickle

    agent = Agent("openai:gpt-bench", base_url=url, api_key="sk-bench", env={})
    spec = build_spec(agent, {"base_url": url, "api_key": "sk-bench", "env": {}}, {})

    async def one() -> int:
        worker = WorkerAgent(spec, _LocalLimiter())
        try:
            remote = await worker.run("Classify: row 1", "c_bench", keep_messages=False)
        finally:
            await worker.aclose()
        assert remote.error is None, remote.error
        return len(cloudpickle.dumps(remote))

    return asyncio.run(one())


def round_trips(call: Callable[[], Any], burst: Callable[[int], Any]) -> tuple[float, float]:
    """(ms per sequential call, calls/s when ``BURST`` are in flight at once)."""
    for _ in range(50):  # warm-up: connections, the actor's first calls
        call()
    count = 500
    started = time.perf_counter()
    for _ in range(count):
        call()
    sequential = (time.perf_counter() - started) / count * 1000
    started = time.perf_counter()
    burst(BURST)
    return sequential, BURST / (time.perf_counter() - started)


def ray_limiter_costs() -> tuple[float, float]:
    import ray

    from nbagent.batch.distributed.ray_executor import LimiterActor

    limiter = ray.remote(LimiterActor).options(num_cpus=0).remote(None, None)
    try:
        return round_trips(
            lambda: ray.get(limiter.admit.remote(1)),
            lambda n: ray.get([limiter.admit.remote(1) for _ in range(n)]),
        )
    finally:
        ray.kill(limiter)


def dask_limiter_costs(client: Any) -> tuple[float, float]:
    from nbagent.batch.distributed.dask_plugin import LimiterPlugin

    client.register_plugin(LimiterPlugin())
    name = "nbagent-bench"
    scheduler = client.scheduler
    client.sync(scheduler.nbagent_limiter_open, name=name, rpm=None, tpm=None)

    async def many(n: int) -> None:
        await asyncio.gather(
            *(scheduler.nbagent_limiter_admit(name=name, tokens=1) for _ in range(n))
        )

    try:
        return round_trips(
            lambda: client.sync(scheduler.nbagent_limiter_admit, name=name, tokens=1),
            lambda n: client.sync(many, n),
        )
    finally:
        client.sync(scheduler.nbagent_limiter_close, name=name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20_000)
    args = parser.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage report leaves
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a loopback cluster: no token file
    server = ServerProcess(responder)
    url = server.url + "/v1"
    folder = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    ray_dir = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))  # short: Ray's socket paths
    print(f"load before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} CPUs")
    try:
        import ray
        from distributed import Client, LocalCluster

        frame = pd.DataFrame({"text": [f"row {i}" for i in range(args.rows)]})
        warm = frame.head(200)
        timed_map(url, warm, folder / "warm.db", None)
        local = timed_map(url, frame, folder / "local.db", None)

        ray.init(
            num_cpus=WORKERS,
            include_dashboard=False,
            log_to_driver=False,
            _temp_dir=str(ray_dir),
        )
        on_ray = RayExecutor(num_workers=WORKERS)
        timed_map(url, warm, folder / "ray-warm.db", on_ray)
        on_ray_run = timed_map(url, frame, folder / "ray.db", on_ray)
        ray_costs = ray_limiter_costs()
        ray.shutdown()

        cluster = LocalCluster(
            n_workers=WORKERS,
            threads_per_worker=CONCURRENCY // WORKERS,
            processes=True,
            dashboard_address=":0",  # any free port: 8787 may be taken
        )
        client = Client(cluster)
        try:
            on_dask = DaskExecutor(client=client)
            timed_map(url, warm, folder / "dask-warm.db", on_dask)
            on_dask_run = timed_map(url, frame, folder / "dask.db", on_dask)
            dask_costs = dask_limiter_costs(client)
        finally:
            client.close()
            cluster.close()

        print(
            f"\n1. {args.rows:,} single-round rows, concurrency {CONCURRENCY}, journal on, "
            f"{WORKERS} workers"
        )
        line("local executor (baseline)", local, args.rows, local)
        line(f"Ray, {WORKERS} actors", on_ray_run, args.rows, local)
        line(f"Dask, {WORKERS} workers x {CONCURRENCY // WORKERS} threads", on_dask_run,
             args.rows, local)  # fmt: skip
        save, bare = journal_cost(folder, rows=5000)
        print("\n2. Per-row costs")
        print(f"  journal write on the driver      {save * 1000:7.3f} ms a row (bare sqlite "
              f"{bare * 1000:.3f} ms)")  # fmt: skip
        print(f"  one row's result, pickled        {result_bytes(url):7d} bytes")
        for engine, (sequential, capacity) in (("Ray actor", ray_costs), ("Dask", dask_costs)):
            print(
                f"  limiter round trip ({engine:9s})  {sequential:7.3f} ms one at a time, "
                f"{capacity:7.0f} admits/s with {BURST} in flight"
            )
        print(f"\nload after: {os.getloadavg()[0]:.2f} (1 min)")
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(ray_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
