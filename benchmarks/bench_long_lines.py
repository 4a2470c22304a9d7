"""One long line, fed in network-sized pieces: parsing time must grow linearly with it.

Run: ``python benchmarks/bench_long_lines.py [--mb 2] [--piece 16384]``

A single SSE event (``data: "xxx…"``) and a single NDJSON line of ``--mb``
megabytes, then of 4x that, are fed to nbagent's SSEParser / NDJSONParser in
``--piece``-byte pieces (what httpx hands over) and the line is parsed at its end.
Reported: the time for each size and the ratio 4x-line time / 1x-line time.

Goal: ratio about 4 (linear). A parser that rescans or re-copies its buffer on
every piece is quadratic: about 16.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nbagent.providers.http.framing import NDJSONParser, SSEParser  # noqa: E402


def sse_body(size: int) -> bytes:
    return b'data: "' + b"x" * size + b'"\n\n'


def ndjson_body(size: int) -> bytes:
    return b'{"text": "' + b"x" * size + b'"}\n'


def feed_sse(body: bytes, piece: int) -> int:
    parser = SSEParser()
    events = []
    for i in range(0, len(body), piece):
        events += parser.feed(body[i : i + piece])
    assert len(events) == 1
    return len(events[0].data)


def feed_ndjson(body: bytes, piece: int) -> int:
    parser = NDJSONParser()
    values = []
    for i in range(0, len(body), piece):
        values += parser.feed(body[i : i + piece])
    assert len(values) == 1
    return len(values[0]["text"])


def timed(fn: Callable[[bytes, int], int], body: bytes, piece: int, reps: int) -> float:
    times = []
    for _ in range(reps):
        started = time.perf_counter()
        fn(body, piece)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=2.0, help="the shorter line, in MB")
    parser.add_argument("--piece", type=int, default=16384, help="bytes per feed")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    size = int(args.mb * 1_000_000)
    print(f"one line of {args.mb:g} MB and of {4 * args.mb:g} MB, fed in {args.piece} B pieces")
    print(f"{'format':8} {'1x':>10} {'4x':>10} {'ratio':>7}")
    for name, fn, make in (("SSE", feed_sse, sse_body), ("NDJSON", feed_ndjson, ndjson_body)):
        short = timed(fn, make(size), args.piece, args.reps)
        long = timed(fn, make(4 * size), args.piece, args.reps)
        print(f"{name:8} {short * 1000:8.1f}ms {long * 1000:8.1f}ms {long / short:6.1f}x")


if __name__ == "__main__":
    main()
