"""Cost of ``%load_ext nbagent``, as a ratio to ``import httpx, pydantic, IPython``.

Goal (issue 4): in a fresh kernel, ``%load_ext nbagent`` costs at most 1.3x the
baseline. Every measurement is a fresh process timing only its own statement
(interpreter and kernel start-up excluded); medians of alternating runs.

- baseline: a fresh interpreter times ``import httpx, pydantic, IPython``.
- shell: a fresh interpreter creates an IPython ``InteractiveShell`` (as a kernel
  has one before any cell runs), then times ``%load_ext nbagent``.
- kernel: a real ipykernel (started through jupyter_client) times
  ``%load_ext nbagent`` in its first cell. Skipped with ``--no-kernel``.

    python benchmarks/bench_load_ext.py [repetitions] [--no-kernel]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BASELINE = """
import time
_t = time.perf_counter()
import httpx, pydantic, IPython
print(time.perf_counter() - _t)
"""

SHELL = """
import time
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
_t = time.perf_counter()
shell.run_line_magic("load_ext", "nbagent")
print(time.perf_counter() - _t)
"""

KERNEL_CELL = """
import time as _time
_t = _time.perf_counter()
get_ipython().run_line_magic("load_ext", "nbagent")
print(_time.perf_counter() - _t)
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def in_interpreter(code: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=_env()
    ).stdout
    return float(out.strip().splitlines()[-1])


def in_kernel() -> float:
    """Start a fresh ipykernel, time ``%load_ext nbagent`` in its first cell."""
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", env=_env(), cwd=str(ROOT))
    try:
        printed: list[str] = []

        def collect(msg: dict) -> None:  # type: ignore[type-arg]
            if msg["msg_type"] == "stream":
                printed.append(msg["content"]["text"])

        kc.execute_interactive(KERNEL_CELL, timeout=60, output_hook=collect)
        return float("".join(printed).strip().splitlines()[-1])
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    reps = int(args[0]) if args else 11
    use_kernel = "--no-kernel" not in sys.argv
    cases = {"baseline: import httpx, pydantic, IPython": lambda: in_interpreter(BASELINE)}
    cases["%load_ext nbagent in a fresh InteractiveShell"] = lambda: in_interpreter(SHELL)
    if use_kernel:
        cases["%load_ext nbagent in a fresh ipykernel"] = in_kernel
    for measure in cases.values():  # warm the file cache once
        measure()
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(reps):
        for name, measure in cases.items():  # alternate so drift hits all cases alike
            times[name].append(measure())
    base = statistics.median(times["baseline: import httpx, pydantic, IPython"])
    print(f"median of {reps} fresh processes (2-core machine, shared)")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:48s} {median * 1000:7.1f} ms  {median / base:5.2f}x")
    worst = max(statistics.median(v) for n, v in times.items() if "load_ext" in n) / base
    verdict = "OK" if worst <= 1.3 else "MISSED"
    print(f"%load_ext nbagent / baseline = {worst:.2f}x (goal <= 1.3x): {verdict}")


if __name__ == "__main__":
    main()
