"""Turning big tool results into model text: time and peak extra memory.

A 10-million-row DataFrame (int, float, datetime, string columns), one of its
columns as a Series, and a 5 MB string go through ``to_model_text`` with the
default per-call budget (4,000 characters). Goal: each under 100 ms with no full
copy (peak extra memory a tiny fraction of the value's size).

Baselines measured in the same run: pandas' own ``repr(df)`` (already a
truncated view) and, for the string, ``json.dumps`` of it (what a naive
formatter does); the frame's own size is the yardstick for memory.

    python benchmarks/bench_format.py
"""

from __future__ import annotations

import json
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from nbagent._internal.values import to_model_text
from nbagent.tools import PER_CALL_CHARS

ROWS = 10_000_000


def timed(fn: Callable[[], Any], reps: int = 7) -> float:
    fn()  # warm-up (imports, caches)
    times = []
    for _ in range(reps):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def peak_extra(fn: Callable[[], Any]) -> int:
    """Peak bytes allocated while ``fn`` runs (numpy buffers are traced too)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak - base


def report(label: str, value: Any, size: int, baseline: tuple[str, Callable[[], Any]]) -> None:
    ours = timed(lambda: to_model_text(value, PER_CALL_CHARS))
    base_name, base_fn = baseline
    base = timed(base_fn, reps=3)
    memory = peak_extra(lambda: to_model_text(value, PER_CALL_CHARS))
    text, _ = to_model_text(value, PER_CALL_CHARS)
    verdict = "OK" if ours < 0.1 and memory < size / 100 else "MISSED"
    print(f"{label}  ({size / 1e6:.0f} MB)")
    print(f"  to_model_text      {ours * 1000:8.3f} ms   -> {len(text)} characters")
    print(f"  {base_name:18s} {base * 1000:8.3f} ms   ratio ours/baseline {ours / base:.5f}")
    print(f"  peak extra memory  {memory / 1e3:8.1f} kB  = {memory / size:.5%} of the value")
    print(f"  goal < 100 ms and no full copy: {verdict}")


def main() -> None:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "id": np.arange(ROWS, dtype=np.int64),
            "price": rng.random(ROWS),
            "when": pd.date_range("2020-01-01", periods=ROWS, freq="s"),
            "city": pd.Categorical(rng.choice(["Oslo", "Lima", "Pune", "Kyiv"], ROWS)),
        }
    )
    frame_size = int(frame.memory_usage(deep=False).sum())
    print(f"{ROWS:,} rows x {frame.shape[1]} columns, per-call budget {PER_CALL_CHARS} chars\n")
    report("DataFrame", frame, frame_size, ("pandas repr(df)", lambda: repr(frame)))
    series = frame["price"]
    report("Series", series, int(series.memory_usage()), ("pandas repr(s)", lambda: repr(series)))
    text = ("The quick brown fox jumps over the lazy dog. " * 120_000)[:5_000_000]
    report("5 MB string", text, len(text), ("json.dumps(text)", lambda: json.dumps(text)))
    sample, _ = to_model_text(frame, PER_CALL_CHARS)
    print("\nWhat the model sees for the DataFrame:\n" + sample)


if __name__ == "__main__":
    main()
