"""Cold import time of nbagent, as a ratio to ``import httpx, pydantic`` in the same run.

Each measurement is a fresh interpreter timing its own import statement (so
interpreter start-up is excluded); the median of several alternating runs is
reported. Goal: ``import nbagent`` <= 1.3x the baseline.

    python benchmarks/bench_import.py [repetitions]
"""

from __future__ import annotations

import statistics
import subprocess
import sys

CASES = {
    "baseline: import httpx, pydantic": "import httpx, pydantic",
    "import nbagent": "import nbagent",
    "import nbagent + first @tool (loads pydantic)": (
        "import nbagent\n@nbagent.tool\ndef f(a: int) -> int:\n    '''F.'''\n    return a"
    ),
    "import nbagent + openai adapter": (
        "import nbagent\nfrom nbagent.providers import get_provider\n"
        "get_provider('openai:gpt-4o-mini', api_key='x')"
    ),
}

TEMPLATE = """
import time
_t = time.perf_counter()
{code}
print(time.perf_counter() - _t)
"""


def measure(code: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", TEMPLATE.format(code=code)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return float(out.strip().splitlines()[-1])


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    times: dict[str, list[float]] = {name: [] for name in CASES}
    for name, code in CASES.items():  # warm the file cache once
        try:
            measure(code)
        except subprocess.CalledProcessError:
            times.pop(name)
    for _ in range(reps):
        for name in times:  # alternate cases so drift hits all of them alike
            times[name].append(measure(CASES[name]))
    base = statistics.median(times["baseline: import httpx, pydantic"])
    print(f"cold import, median of {reps} fresh interpreters")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:48s} {median * 1000:7.1f} ms  {median / base:5.2f}x")
    ratio = statistics.median(times["import nbagent"]) / base
    verdict = "OK" if ratio <= 1.3 else "MISSED"
    print(f"import nbagent / baseline = {ratio:.2f}x (goal <= 1.3x): {verdict}")


if __name__ == "__main__":
    main()
