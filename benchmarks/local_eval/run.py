"""Does the embedded model call the right tool with the right arguments? Both halves.

One provider request per prompt (the request the agent loop sends first), over the
nine tool sets of ``tools.py`` and the 116 prompts of ``cases.py``:

* right tool: the expected tool was called, or no tool when none was expected;
* right arguments: for tool prompts, the right tool with the expected arguments;
* wrong call: a tool was called when none was expected, or a different tool
  (over all prompts), and separately over the no-tool prompts only;
* answered without the tool: a tool prompt answered in text (counted as a failure).

Usage::

    python -m benchmarks.local_eval.run                      # both halves, combined decision
    python -m benchmarks.local_eval.run --decision model     # the model's probabilities alone
    python -m benchmarks.local_eval.run --half dev --json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import time
from typing import Any

from nbagent.messages import Message
from nbagent.providers.base import ModelRequest, TextChunk, ToolCallReady
from nbagent.providers.local import LocalProvider, load_model, smollm2_path

from .cases import Case, split
from .tools import TOOL_SETS


def same(expected: Any, got: Any) -> bool:
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        try:
            return abs(float(got) - float(expected)) < 1e-6
        except (TypeError, ValueError):
            return False
    return str(expected).strip().lower() == str(got).strip().lower()


def args_match(expected: dict[str, Any] | None, got: dict[str, Any]) -> bool:
    if expected is None:
        return True
    return all(key in got and same(value, got[key]) for key, value in expected.items())


async def run_case(provider: LocalProvider, case: Case) -> dict[str, Any]:
    tool_set, prompt, want, want_args = case
    tools = TOOL_SETS[tool_set]
    request = ModelRequest(
        system=None,
        messages=[Message("user", prompt)],
        tools=[t.spec for t in tools],
        max_output_tokens=48,
    )
    started = time.perf_counter()
    call = None
    text = ""
    async for event in provider.stream(request):
        if isinstance(event, ToolCallReady):
            call = event.call
        elif isinstance(event, TextChunk):
            text += event.text
    seconds = time.perf_counter() - started
    got = call.name if call else None
    return {
        "set": tool_set,
        "prompt": prompt,
        "want": want,
        "got": got,
        "want_args": want_args,
        "args": call.arguments if call else None,
        "right_tool": got == want,
        "right_args": want is not None and got == want and args_match(want_args, call.arguments),
        "wrong_call": got is not None and got != want,
        "no_tool_call": want is None and got is not None,
        "skipped_tool": want is not None and got is None,
        "seconds": seconds,
        "text": text[:80],
    }


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    tool_rows = [r for r in rows if r["want"] is not None]
    none_rows = [r for r in rows if r["want"] is None]

    def pct(part: int, whole: int) -> float:
        return round(100.0 * part / whole, 1) if whole else 0.0

    return {
        "prompts": len(rows),
        "right_tool_pct": pct(sum(r["right_tool"] for r in rows), len(rows)),
        "right_args_pct": pct(sum(r["right_args"] for r in tool_rows), len(tool_rows)),
        "wrong_call_pct": pct(sum(r["wrong_call"] for r in rows), len(rows)),
        "no_tool_prompts_with_a_call_pct": pct(
            sum(r["no_tool_call"] for r in none_rows), len(none_rows)
        ),
        "answered_without_tool_pct": pct(sum(r["skipped_tool"] for r in tool_rows), len(tool_rows)),
        "median_s": round(statistics.median(r["seconds"] for r in rows), 3),
        "p90_s": round(sorted(r["seconds"] for r in rows)[int(0.9 * (len(rows) - 1))], 3),
    }


async def evaluate(halves: list[str], decision: str, verbose: bool) -> dict[str, Any]:
    provider = LocalProvider("", decision=decision)
    started = time.perf_counter()
    loaded = load_model(smollm2_path(), provider.n_ctx, provider.n_threads)
    report: dict[str, Any] = {
        "decision": decision,
        "threads": loaded.threads,
        "load_s": round(time.perf_counter() - started, 2),
        "load_average_start": round(os.getloadavg()[0], 2),
    }
    for half in halves:
        rows = [await run_case(provider, case) for case in split(half)]
        report[half] = summary(rows)
        report[half + "_rows"] = rows
        if verbose:
            for r in rows:
                mark = (
                    "ok " if r["right_tool"] and (r["want"] is None or r["right_args"]) else "BAD"
                )
                print(
                    f"{mark} {r['set']:10} {r['prompt'][:50]:50} want={r['want']} "
                    f"got={r['got']} {json.dumps(r['args'], ensure_ascii=False)}"
                )
    report["load_average_end"] = round(os.getloadavg()[0], 2)
    report["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", choices=["dev", "held", "both", "calib"], default="both")
    parser.add_argument("--decision", choices=["combined", "model"], default="combined")
    parser.add_argument("--json", help="write the report (with every row) here")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case")
    args = parser.parse_args()
    halves = ["dev", "held"] if args.half == "both" else [args.half]
    report = asyncio.run(evaluate(halves, args.decision, args.verbose))
    for key in (
        "decision",
        "threads",
        "load_s",
        "load_average_start",
        "load_average_end",
        "peak_rss_mb",
    ):
        print(f"{key}: {report[key]}")
    for half in halves:
        print(half, json.dumps(report[half]))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(report, out, indent=1, ensure_ascii=False, default=str)


if __name__ == "__main__":
    main()
