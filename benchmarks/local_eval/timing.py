"""Seconds per question on the embedded model, with the load average, optionally under a CPU hog.

Each question is a whole agent run (decision, arguments, tool, answer) on a model
loaded once. ``--hog N`` starts N busy processes first; ``--threads`` overrides the
automatic thread choice (to compare).

    python -m benchmarks.local_eval.timing --hog 2
    python -m benchmarks.local_eval.timing --hog 2 --threads 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from nbagent import Agent

from .tools import add, get_weather

QUESTIONS = [
    "What's the weather in Tokyo?",
    "What is 17 plus 25?",
    "Is it raining in London?",
    "Add 8 and 13.",
    "Hello! How are you today?",
    "What is the weather in Lima?",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hog", type=int, default=0, help="busy processes to start first")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hog)]
    try:
        if hogs:
            time.sleep(5)
        env = dict(os.environ)
        if args.threads:
            env["NBAGENT_LOCAL_THREADS"] = str(args.threads)
        agent = Agent("local", tools=[get_weather, add], env=env)
        agent.run_sync("Say hi.")  # load the model
        seconds = []
        for question in QUESTIONS:
            agent.reset()
            started = time.perf_counter()
            agent.run_sync(question)
            seconds.append(time.perf_counter() - started)
        load = os.getloadavg()[0]
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    report = {
        "hogs": args.hog,
        "threads": args.threads or "auto",
        "load_average": round(load, 2),
        "median_s": round(statistics.median(seconds), 2),
        "max_s": round(max(seconds), 2),
        "per_question_s": [round(s, 2) for s in seconds],
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
