"""The kernel agent's two budgets: the inventory, and a figure made model-ready.

1. ``list_variables`` on a namespace of 10,000 variables, 100 of them DataFrames of
   1,000,000 rows (4 columns each). Goal: under 50 ms and no copy of any frame
   (peak extra memory under a tenth of one frame). Baseline in the same run:
   ``repr()`` of every variable, what a naive inventory does (over the frames only,
   which is already far slower).
2. A 1,024-px matplotlib figure (10.24 × 7.68 in at 100 dpi) to a model-ready PNG
   (``nbagent._internal.images.to_image``), for a typical plot and a busy one. Goal: under
   100 ms. Baseline: the same figure's ``savefig`` at its own size, the floor any
   conversion pays (rendering and PNG encoding are matplotlib's and zlib's).

    python benchmarks/bench_kernel.py
"""

from __future__ import annotations

import io
import os
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from nbagent._internal.images import to_image
from nbagent.kernel import kernel_tools

VARIABLES = 10_000
FRAMES = 100
ROWS = 1_000_000


def timed(fn: Callable[[], Any], reps: int = 7) -> float:
    fn()  # warm-up
    times = []
    for _ in range(reps):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def peak_extra(fn: Callable[[], Any]) -> int:
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak - base


def namespace() -> dict[str, Any]:
    ns: dict[str, Any] = {}
    column = np.arange(ROWS, dtype=np.int64)
    for i in range(FRAMES):
        # Columns share one buffer: 100 frames of 1M rows without 3 GB of RAM.
        ns[f"frame_{i}"] = pd.DataFrame(
            {"a": column, "b": column, "c": column, "d": column}, copy=False
        )
    kinds: list[Any] = [0, 1.5, "text", [1, 2, 3], {"k": 1}, None, (1, 2), b"xy"]
    for i in range(VARIABLES - FRAMES):
        ns[f"v_{i}"] = kinds[i % len(kinds)]
    return ns


def main() -> None:
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    ns = namespace()
    list_variables = next(t for t in kernel_tools(namespace=ns) if t.name == "list_variables")
    ours = timed(list_variables.fn)
    text = list_variables.fn()
    memory = peak_extra(list_variables.fn)
    frames = [v for v in ns.values() if isinstance(v, pd.DataFrame)]
    naive = timed(lambda: [repr(v) for v in frames], reps=3)
    one_frame = frames[0].memory_usage(deep=False).sum()
    verdict = "OK" if ours < 0.05 and memory < one_frame / 10 else "MISSED"
    print(
        f"list_variables, {VARIABLES:,} variables incl. {FRAMES} DataFrames of {ROWS:,} rows: "
        f"{ours * 1000:.1f} ms, peak extra {memory / 1024:.0f} KiB "
        f"(one frame: {one_frame / 2**20:.0f} MiB), {len(text):,} chars; "
        f"naive repr() of the frames alone: {naive * 1000:.0f} ms "
        f"({naive / ours:.0f}x slower) [{verdict}: goal < 50 ms, no copy]"
    )

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    for label, lines, points in (("a typical plot", 1, 100), ("a busy plot", 5, 2_000)):
        figure = Figure(figsize=(10.24, 7.68), dpi=100)
        axes = figure.add_subplot()
        xs = np.linspace(0, 20, points)
        for k in range(lines):
            axes.plot(xs, np.sin(xs + k), label=f"series {k}")
        axes.set(title="revenue by month", xlabel="month", ylabel="revenue")
        axes.legend()

        def savefig(figure: Any = figure) -> None:
            figure.savefig(io.BytesIO(), format="png")

        image = to_image(figure)
        ours = timed(lambda figure=figure: to_image(figure))
        floor = timed(savefig)
        verdict = "OK" if ours < 0.1 else "MISSED"
        print(
            f"1,024-px figure ({label}: {lines} line(s) of {points:,} points) to a model-ready "
            f"image ({image.describe()}, {len(image.data) / 1024:.0f} KiB): "
            f"{ours * 1000:.1f} ms; matplotlib's own savefig {floor * 1000:.1f} ms "
            f"(ratio {ours / floor:.2f}) [{verdict}: goal < 100 ms]"
        )


if __name__ == "__main__":
    main()
