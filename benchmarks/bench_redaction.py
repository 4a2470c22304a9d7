"""What redaction and output neutralising cost on 1 MB of text.

Times, on the same 1 MB of ordinary text (one configured key echoed once near
the end, as a server's error body would), the work every written byte goes
through: ``Scrubber.text`` (known secrets, their 10+ character fragments and
key-shaped text), the process-wide ``redaction.scrub`` (every remembered key
plus key-like environment variables), ``safe_text.clean`` (control and bidi
characters) and ``bounded.dumps`` of a 1 MB list. Each is reported in ms and as a
ratio to one ``str.replace`` pass over the same text, measured in the same run
(absolute times on a shared machine mean little; the ratios travel).

Runs against whichever nbagent is importable, so ``PYTHONPATH=<old checkout>``
gives the "before" figures (lines for functions it lacks say "n/a").

    python benchmarks/bench_redaction.py [repeats]
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from nbagent import redaction

KEY = "zq-LOOPBACK-7f3a9c1e5b2d4f60a8"
LINE = "The quick brown fox jumps over the lazy dog; tokens=1234 status=ok. "


def text_of(size: int) -> str:
    body = (LINE * (size // len(LINE) + 1))[: size - 200]
    return body + " error: invalid key " + KEY + " " + "x" * (200 - 21 - len(KEY))


def best(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e3


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    text = text_of(1_000_000)
    scrubber = redaction.Scrubber([KEY])
    base = best(lambda: text.replace(KEY, "[redacted]"), repeats)
    print(f"text: {len(text):,} characters; median of {repeats}")
    print(f"baseline str.replace:            {base:8.2f} ms")

    def process() -> Any:
        return redaction.scrub(text)  # type: ignore[attr-defined, unused-ignore]

    rows: list[tuple[str, Callable[[], Any] | None]] = [
        ("Scrubber.text (one key)", lambda: scrubber.text(text)),
        ("Scrubber.exact (one key)", lambda: scrubber.exact(text)),
        ("redaction.scrub (process)", getattr(redaction, "scrub", None) and process),
    ]  # fmt: skip
    try:
        from nbagent._internal.safe_text import clean

        rows.append(("safe_text.clean", lambda: clean(text)))
    except ImportError:
        rows.append(("safe_text.clean", None))
    try:
        from nbagent._internal.bounded import dumps

        items = [LINE] * (1_000_000 // len(LINE))
        rows.append(("bounded.dumps (1 MB list)", lambda: dumps(items)))
    except ImportError:
        rows.append(("bounded.dumps (1 MB list)", None))
    for name, fn in rows:
        if fn is None:
            print(f"{name + ':':32s}      n/a")
            continue
        ms = best(fn, repeats)
        print(f"{name + ':':32s} {ms:8.2f} ms  (ratio {ms / base:6.1f}x, {1000 / ms:6.1f} MB/s)")
    assert KEY not in scrubber.text(text)


if __name__ == "__main__":
    main()
