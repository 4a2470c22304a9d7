"""100,000 rows without holding every conversation: RSS stays flat (slow: about a minute)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pandas as pd
import pytest

from nbagent import Agent
from nbagent.batch import BatchStats
from nbagent.messages import Usage
from nbagent.providers import Finished, TextChunk, UsageReport

pytestmark = pytest.mark.slow


class Instant:
    """A provider answering at once and keeping nothing (ScriptedModel keeps its requests)."""

    name = "instant"
    model = "label"

    async def stream(self, request: Any) -> Any:
        yield TextChunk("label")
        yield UsageReport(Usage(20, 5))
        yield Finished("stop")

    async def aclose(self) -> None:
        return None


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


class Sampler:
    """A progress display that samples RSS every 10,000 rows."""

    def __init__(self) -> None:
        self.samples: dict[int, float] = {}

    def start(self, stats: BatchStats) -> None:
        pass

    def update(self, stats: BatchStats) -> None:
        if stats.finished % 10_000 == 0:
            self.samples[stats.finished] = rss_mb()

    def finish(self, stats: BatchStats) -> None:
        self.samples[stats.finished] = rss_mb()


def test_100000_rows_keep_rss_flat(tmp_path):
    rows = 100_000
    agent = Agent(Instant(), tools=[], store=tmp_path / "h.db")
    frame = pd.DataFrame({"text": [f"row {i}" for i in range(rows)]})
    sampler = Sampler()
    out = asyncio.run(
        agent.amap(frame, "Classify: {text}", concurrency=32, progress=sampler, history=False)
    )
    assert out["error"].isna().all() and len(out) == rows
    growth = sampler.samples[rows] - sampler.samples[10_000]
    # The frame's own values are the floor; no conversation, task or result piles up.
    assert growth < 100, sampler.samples
