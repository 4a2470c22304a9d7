"""Running a hostile scenario in a real child process, with a hard deadline.

A scenario that hangs (the bug it guards against) must fail its test, not hang
the suite: the child is SIGKILLed at the deadline and the test fails saying so.
The child prints one JSON line last; :func:`run_child` returns it parsed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.support.env import child_environment

ROOT = Path(__file__).resolve().parents[2]

PRELUDE = """
import asyncio, json, os, signal, socket, sys, threading, time
from nbagent import Agent, tool
from nbagent.testing import ScriptedModel, call, reply
from tests.core.helpers import assert_history_valid

def first_call(*calls):
    # A model that calls them for the prompt "go", then answers with their results;
    # any other prompt is echoed.
    def script(request):
        if request.tool_results:
            return " | ".join(r.content for r in request.tool_results)
        if request.prompt != "go":
            return request.prompt
        return reply(calls=[call(name, **args) for name, args in calls])
    return script

def done(**facts):
    print(json.dumps(facts), flush=True)
    os._exit(0)  # abandoned daemon threads (stuck tools) must not hold the exit
"""


def run_child(code: str, home: Path, *, deadline: float = 60.0) -> dict[str, Any]:
    """Run ``PRELUDE + code`` in a fresh interpreter; its last printed line, as JSON."""
    env = child_environment(
        NBAGENT_HOME=str(home),
        PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    source = PRELUDE + textwrap.dedent(code)
    try:
        done = subprocess.run(
            [sys.executable, "-c", source],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=deadline,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:  # subprocess.run SIGKILLs the child
        raise AssertionError(
            f"the scenario hung: killed after {deadline:g} s\nstderr: {exc.stderr!r}"
        ) from None
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, f"rc={done.returncode}\n{done.stdout}\n{done.stderr}"
    result: dict[str, Any] = json.loads(lines[-1])
    return result


# --------------------------------------------------------------------------- families

FAMILIES: dict[str, tuple[str, str]] = {
    # issue 19, part B: family -> (test module, what an attacker or a careless server tries)
    "quoted text runs a tool": (
        "tests.hardening.test_quoted_calls",
        "call markup in prose, a fenced example, an unclosed block, a quoted tool result "
        "or prompt, a call to a tool not offered, the forced final answer, hosted OpenAI",
    ),
    "a budget passed by one reply": (
        "tests.hardening.test_budgets_hold",
        "a server ignoring max_tokens, one reporting no usage, a run at the cost cap",
    ),
    "compaction drops the current result": (
        "tests.hardening.test_compaction_order",
        "a small context window with older small talk and a fresh tool result",
    ),
    "tool refusals": (
        "tests.hardening.test_tool_refusals",
        "llama.cpp without --jinja (500/400), OpenRouter's 404, remembered next run",
    ),
    "seed edge cases": (
        "tests.hardening.test_seed_edges",
        "</think> at every chunk boundary, NBAGENT_STRICT in Agent(env=), invalid arguments",
    ),
}
"""Fault families and the modules whose tests hold them (``pytest`` each module)."""
